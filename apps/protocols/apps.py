from django.apps import AppConfig


class ProtocolsConfig(AppConfig):
    name = "apps.protocols"
    label = "protocols"
    verbose_name = "Protocols"
