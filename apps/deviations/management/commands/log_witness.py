"""``manage.py log_witness``: run a witness of the deviation logs over HTTP (C2SP tlog-witness).

    python manage.py log_witness --port 8780 --name witness.example/w1 \\
        --key-file /srv/witness/key.pem --state-dir /srv/witness/state [--log-key KEY ...]

Serves ``POST /add-checkpoint`` and ``GET /<sha256(origin)>/checkpoint`` (``apps/deviations/
witness.py``). It trusts the log keys given (base64 raw Ed25519, or vkeys), by default the
configured signing key's public key and the previous ones, for origins under ``LOG_ORIGIN``.
The key file is created on first start with ``--create-key``. Prints its verifier key, which
auditors pass to the offline verifier as ``--witness-key``. Run it on another machine, under
another operator, for it to be worth having: what it holds is outside the log's reach.
"""

import base64
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.deviations import chain
from apps.deviations.checkpoints import create_key_file, trusted_public_keys
from apps.deviations.witness import MAX_BODY, Answer, Witness


def load_or_create_key(path: Path, *, create: bool) -> Ed25519PrivateKey:
    """The witness's Ed25519 key from a PEM file (created, mode 0600, with ``create``)."""
    if not path.exists():
        if not create:
            raise CommandError(f"{path} does not exist (give --create-key to create it)")
        create_key_file(path)
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise CommandError(f"{path} is not an Ed25519 private key")
    return key


def make_handler(witness: Witness) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the spec recommends

        def _answer(self, answer: Answer) -> None:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def do_POST(self) -> None:
            if self.path.rstrip("/").split("/")[-1] != "add-checkpoint":
                self._answer(Answer(404, b"POST add-checkpoint\n"))
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY:
                self._answer(Answer(400, b"a Content-Length up to 64 KiB is required\n"))
                self.close_connection = True
                return
            self._answer(witness.add_checkpoint(self.rfile.read(length)))

        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            if len(parts) >= 2 and parts[-1] == "checkpoint":
                self._answer(witness.checkpoint_for(parts[-2]))
            else:
                self._answer(Answer(404, b"GET <origin hash>/checkpoint\n"))

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the command prints what matters; no access log on stderr

    return Handler


class Command(BaseCommand):
    help = "Run a witness of the deviation logs (C2SP tlog-witness) on a local port."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8780)
        parser.add_argument("--name", default="witness.preregistry.local/w1")
        parser.add_argument("--key-file", required=True, type=Path)
        parser.add_argument("--create-key", action="store_true")
        parser.add_argument("--state-dir", required=True, type=Path)
        parser.add_argument("--log-key", action="append", default=[], metavar="KEY")
        parser.add_argument("--origin-prefix", default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        key = load_or_create_key(options["key_file"], create=options["create_key"])
        try:
            log_keys = [
                chain.parse_verifier_key(k).public_raw
                for k in (options["log_key"] or trusted_public_keys())
            ]
        except ValueError as error:
            raise CommandError(str(error)) from error
        if not log_keys:
            raise CommandError("no log key: give --log-key or configure LOG_SIGNING_KEY")
        witness = Witness(
            name=options["name"],
            private_key=key,
            state_dir=options["state_dir"],
            log_keys=log_keys,
            origin_prefix=options["origin_prefix"] or settings.LOG_ORIGIN + "/",
        )
        server = ThreadingHTTPServer((options["host"], options["port"]), make_handler(witness))
        self.stdout.write(
            f"witness {witness.name} on http://{options['host']}:{server.server_port}/ "
            f"(vkey {witness.vkey}); trusting {len(log_keys)} log key(s): "
            + ", ".join(base64.b64encode(k).decode() for k in log_keys)
        )
        self.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
