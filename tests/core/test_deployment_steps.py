"""Issue #37 §10: the README's deployment steps, checked against docker-compose.yml as far as
this machine allows (no Docker engine or compose CLI here, so the files are parsed: `docker
compose config` would read the same things). Each file the compose file reads is one a step
creates from a file in the repository; each variable it interpolates or passes on, and each
one the production settings require, is set in the file the step copies."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings

ROOT = Path(settings.BASE_DIR)


def _deployment_block() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Deployment", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def _env_keys(path: Path) -> set[str]:
    return {
        line.split("=", 1)[0].strip()
        for line in path.read_text().splitlines()
        if "=" in line and not line.lstrip().startswith("#")
    }


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def steps() -> dict[str, Path]:
    """What the README's steps create: target file → the repository file it comes from (or
    None for a file a command writes)."""
    block = _deployment_block()
    made: dict[str, Path | None] = {}
    for source, target in re.findall(r"^cp (\S+) (\S+)", block, re.M):
        assert (ROOT / source).is_file(), f"the README copies {source}, which does not exist"
        made[target] = ROOT / source
    for target in re.findall(r"> (\S+)$", block, re.M):
        made[target] = None
    return made


def test_every_file_the_compose_file_reads_is_made_by_a_step(compose, steps):
    wanted = set()
    for service in compose["services"].values():
        files = service.get("env_file") or []
        wanted |= {files} if isinstance(files, str) else set(files)
    wanted |= {s["file"].removeprefix("./") for s in (compose.get("secrets") or {}).values()}
    missing = sorted(wanted - set(steps))
    assert not missing, f"docker-compose.yml reads {missing}, which no README step creates"


def test_every_variable_the_compose_file_interpolates_is_in_the_env_file(compose, steps):
    # `docker compose` interpolates ${VAR} from .env; $${VAR} is left to the container's shell.
    text = (ROOT / "docker-compose.yml").read_text()
    interpolated = set(re.findall(r"(?<!\$)\$\{(\w+)", text))
    assert interpolated, "the check would check nothing"
    defined = _env_keys(steps[".env"])
    assert interpolated <= defined, f"not in .env.example: {sorted(interpolated - defined)}"


def test_each_services_shell_variables_come_from_its_env_files(compose, steps):
    for name, service in compose["services"].items():
        command = service.get("command")
        text = " ".join(command) if isinstance(command, list) else str(command or "")
        used = set(re.findall(r"\$\$\{(\w+)\}", text))
        files = service.get("env_file") or []
        given = set((service.get("environment") or {}).keys())
        for file in [files] if isinstance(files, str) else files:
            given |= _env_keys(steps[file])
        assert used <= given, f"{name} uses {sorted(used - given)}, set nowhere"


def test_the_values_the_services_need_are_set_where_the_steps_say(compose, steps):
    block = _deployment_block()
    # The production settings refuse to start without these (no default given).
    production = (ROOT / "config" / "settings" / "production.py").read_text()
    required = set(re.findall(r'env(?:\.\w+)?\("(\w+)"\)', production))
    assert {"SECRET_KEY", "ALLOWED_HOSTS"} <= required
    for service in ("web1", "web2", "worker1", "worker2", "beat"):
        given = _env_keys(steps[compose["services"][service]["env_file"]])
        given |= set(compose["services"][service].get("environment") or {})
        assert required <= given, f"{service}: {sorted(required - given)} unset"
    # PostgreSQL's image refuses to initialise without its superuser's password.
    assert "POSTGRES_PASSWORD" in _env_keys(steps[compose["services"]["postgres"]["env_file"]])
    # Each variable a step says to set is in the file that step copies.
    for target, names in re.findall(r"^cp \S+ (\S+)\s+# then set (.*)$", block, re.M):
        for name in re.findall(r"\b[A-Z][A-Z_]{3,}\b", names):
            assert name in _env_keys(steps[target]), f"the README sets {name} in {target}"
    # The runtime role's password is read from both files: the step says to keep them equal.
    assert "PREREGISTRY_APP_PASSWORD" in _env_keys(steps[".env"]) & _env_keys(steps["db.env"])


def test_the_signing_key_step_writes_a_key_the_application_reads():
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    command = re.search(r'python3 -c "(.*?)" >', _deployment_block()).group(1)
    out = subprocess.run(
        [shutil.which("python3") or "python3", "-c", command],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert load_pem_private_key(out.encode(), password=None).public_key()


@pytest.mark.skipif(not shutil.which("docker-compose"), reason="no compose CLI on this machine")
def test_docker_compose_config_accepts_the_files_the_steps_make(tmp_path, steps):
    for target, source in steps.items():
        path = tmp_path / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source.read_text() if source else "key")
    shutil.copy(ROOT / "docker-compose.yml", tmp_path)
    result = subprocess.run(
        ["docker-compose", "config", "-q"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
