from importlib import import_module

from django.apps import AppConfig

# Every built-in study kind, registered in this order (its components run in this order too).
KINDS = ("opb", "crucible", "paired_blocks", "fidelity", "xstest", "comparison")


class StudiesConfig(AppConfig):
    name = "apps.studies"
    label = "studies"
    verbose_name = "Study kinds"

    def ready(self) -> None:
        # The one place each kind is registered: its package's kind.py declares it.
        for kind in KINDS:
            import_module(f"apps.studies.{kind}.kind")
