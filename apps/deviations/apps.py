from django.apps import AppConfig


class DeviationsConfig(AppConfig):
    name = "apps.deviations"
    label = "deviations"
    verbose_name = "Deviation log"

    def ready(self) -> None:
        from apps.deviations.checkpoints import stored_checkpoints
        from apps.deviations.selectors import chain_verify
        from apps.protocols.integrity import register_log_verifier

        register_log_verifier(
            lambda protocol: chain_verify(
                protocol=protocol, checkpoints=stored_checkpoints(protocol)
            )
        )
