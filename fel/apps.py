from django.apps import AppConfig


class FelConfig(AppConfig):
    name = "fel"
    verbose_name = "FEL invoices"
