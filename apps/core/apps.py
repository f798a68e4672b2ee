from django.apps import AppConfig
from django.core.signals import request_started


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from apps.core.dbhealth import check_idle_connections

        # Connected after Django's ``close_old_connections`` (django.db connects it on import),
        # so it sees each request's connections after Django's own end-of-age closing.
        request_started.connect(check_idle_connections, dispatch_uid="core.check_idle_connections")
