"""Running the offline verifier as an auditor does: a copy of ``chain.py`` outside the project,
under ``python -I -S`` (no site-packages: no Django, no project), with the one package it may
use, `cryptography`, on its path (linked from this environment with its own dependencies)."""

import subprocess
import sys
from pathlib import Path

import cffi
import cryptography
import pycparser

from apps.deviations import chain
from apps.deviations.checkpoints import signing_key

_RUN = (
    "import runpy, sys\n"
    "deps = sys.argv.pop(1)\n"
    "if deps: sys.path.insert(0, deps)\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def _cryptography_only(folder: Path) -> Path:
    """A folder holding `cryptography` and what it imports (cffi's backend), nothing else."""
    deps = folder / "auditor-packages"
    if deps.exists():
        return deps
    deps.mkdir()
    site = Path(cryptography.__file__).parent.parent
    for module in (cryptography, cffi, pycparser):
        (deps / Path(module.__file__).parent.name).symlink_to(Path(module.__file__).parent)
    for backend in site.glob("_cffi_backend*.so"):
        (deps / backend.name).symlink_to(backend)
    return deps


def run_script(
    script: Path, *args: str, with_cryptography: bool = True, timeout: int = 120
) -> subprocess.CompletedProcess:
    """Run ``script`` (a copy of the verifier) from its folder, as an auditor would."""
    deps = str(_cryptography_only(script.parent)) if with_cryptography else ""
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", _RUN, deps, str(script), *args],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def offline(folder: Path, *args: str, with_cryptography: bool = True, pinned: bool = True):
    """Copy the verifier into ``folder`` and run it there; ``pinned``: with the server's public
    key given as ``--public-key`` (what an auditor saved from /logs/signing-key)."""
    script = folder / "verify_log.py"
    script.write_bytes(Path(chain.__file__).read_bytes())
    key = ["--public-key", signing_key().public_b64] if pinned else []
    return run_script(script, *args, *key, with_cryptography=with_cryptography)
