from django.apps import AppConfig


class XiaozhiConfig(AppConfig):
    name = "devices.xiaozhi"
    label = "xiaozhi"
    verbose_name = "Stock xiaozhi devices"
