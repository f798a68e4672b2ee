from django.apps import AppConfig


class DeviationsConfig(AppConfig):
    name = "apps.deviations"
    label = "deviations"
    verbose_name = "Deviation log"

    def ready(self) -> None:
        from apps.deviations.selectors import outcomes_visible, protocol_outcomes_visible
        from apps.protocols.seal import register_seal_reads

        # Earlier apps read the seal through apps.protocols.seal, never importing this app.
        register_seal_reads(
            version=outcomes_visible,
            protocol=lambda protocol_id: protocol_outcomes_visible(protocol_id=protocol_id),
        )
