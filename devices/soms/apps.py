from django.apps import AppConfig


class SomsConfig(AppConfig):
    name = "devices.soms"
    label = "soms"
    verbose_name = "SOMS devices"
