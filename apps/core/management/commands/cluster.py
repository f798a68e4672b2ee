"""``manage.py cluster start|stop|status``: the multi-node deployment of ``make cluster``.

Ports and folders come from the environment (``apps.core.cluster``, docs/cluster.md).
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.core.cluster import Cluster, ClusterError


class Command(BaseCommand):
    help = "Start, stop or list the local multi-node cluster (two web nodes, PgBouncer, workers)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("start", "stop", "status"))
        parser.add_argument(
            "--no-migrate", action="store_true", help="start without running migrate first"
        )

    def handle(self, *args: Any, action: str, no_migrate: bool = False, **options: Any) -> None:
        try:
            cluster = Cluster.from_env()
            if action == "start":
                cluster.start(migrate=not no_migrate)
                self.stdout.write(
                    f"cluster up: {cluster.url} (nodes {', '.join(map(str, cluster.node_ports))}, "
                    f"PgBouncer {cluster.pgbouncer_port}, stats "
                    f"http://127.0.0.1:{cluster.stats_port}/, run directory {cluster.run_dir})"
                )
            elif action == "stop":
                cluster.stop()
                self.stdout.write("cluster stopped")
            else:
                for name, alive in cluster.status().items():
                    self.stdout.write(f"{name}: {'running' if alive else 'stopped'}")
        except ClusterError as error:
            raise CommandError(str(error)) from error
