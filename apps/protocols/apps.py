from django.apps import AppConfig


class ProtocolsConfig(AppConfig):
    name = "apps.protocols"
    label = "protocols"
    verbose_name = "Protocols"

    def ready(self) -> None:
        from apps.deviations.refs import register_ref_type
        from apps.protocols.refs import blob_url, version_url

        register_ref_type("version", version_url)
        register_ref_type("blob", blob_url)
