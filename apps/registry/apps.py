from django.apps import AppConfig


class RegistryConfig(AppConfig):
    name = "apps.registry"
    label = "registry"
    verbose_name = "Public registry"

    def ready(self) -> None:
        from apps.protocols.blobs import register_public_blob
        from apps.registry.selectors import blob_is_public

        # Published versions' documents and published runs' inputs and results: anyone's.
        register_public_blob("registry.published", blob_is_public)
