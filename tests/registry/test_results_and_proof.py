"""Public results and the public, verifiable record.

One OPB study, built once for the module: frozen, published, analysed, unsealed, its run
published and its log checkpointed. A reader downloads what the public pages serve into an empty
folder and proves offline, with nothing else, that the document hashes to its address, that its
freeze is in the chain under a signed checkpoint, and that the freeze came before the outcomes
were first unsealed.
"""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.analysis.models import RunState
from apps.analysis.services import analysis_run_request
from apps.deviations.checkpoints import checkpoint_write
from apps.deviations.services import outcome_unseal
from apps.protocols.services import version_amend
from apps.registry.services import run_publish, version_publish
from tests.factories import freeze, opb_study
from tests.states import built_once

pytestmark = pytest.mark.django_db


def _run(version, user):
    run = analysis_run_request(version=version, user=user)
    # The request enqueues on commit, and ``built_once`` runs the on-commit callbacks only once
    # the whole record is built; the steps after need this run finished: run the task body now
    # (the later callback finds the run claimed and does nothing).
    from apps.analysis.tasks import analysis_run_execute

    analysis_run_execute(run.pk)
    run.refresh_from_db()
    return run


def _record() -> dict:
    study = opb_study(code="PUB-01", evaluands=1)
    version, pi = study.version, study.pi
    version_publish(version=version, user=pi, authors="A. Researcher")
    sealed_run = _run(version, pi)
    checkpoint_write(protocol=version.protocol, force=True)
    outcome_unseal(version=version, user=pi, confirmation=version.protocol.code)
    unpublished_run = _run(version, pi)
    run_publish(run=sealed_run, user=pi)
    # An amendment frozen after the outcomes were seen: its freeze is not "before".
    draft = version_amend(version=version, user=pi)
    draft.amendment_rationale = "Changed after seeing outcomes."
    draft.save()
    late = freeze(draft, pi)
    version_publish(version=late, user=pi, authors="A. Researcher")
    # A later amendment frozen but never published: nothing of it may be public.
    hidden_draft = version_amend(version=late, user=pi)
    hidden_draft.amendment_rationale = "A private rationale nobody outside may read."
    hidden_draft.save()
    hidden = freeze(hidden_draft, pi)
    checkpoint_write(protocol=version.protocol, force=True)
    return {
        "version": version,
        "pi": pi,
        "run": sealed_run,
        "unpublished_run": unpublished_run,
        "late": late,
        "hidden": hidden,
    }


@pytest.fixture(scope="module")
def record(django_db_setup, django_db_blocker):
    with built_once(django_db_blocker, _record) as built:
        yield built


def test_the_runs_are_done(record):
    assert record["run"].state == RunState.SUCCEEDED, record["run"].error
    assert record["unpublished_run"].state == RunState.SUCCEEDED


# -- public results ---------------------------------------------------------------------------


def test_a_published_run_shows_its_hashes_denominators_log_and_downloads(client, record):
    run = record["run"]
    label = record["version"].label
    url = reverse("registry:run", args=["PUB-01", label, run.number])
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200
    for shown in (run.protocol_sha256, run.inputs_id, run.result_id):
        assert shown in html
    assert 'id="denominators"' in html
    assert "Exclusions and missing data" in html  # the analysis app's own OPB report sections
    assert "Analysis run" in html  # the log's analysis entry, up to the run
    result = client.get(reverse("registry:run-result", args=["PUB-01", label, run.number]))
    assert hashlib.sha256(result.content).hexdigest() == run.result_id
    assert result["ETag"] == f'"{run.result_id}"'
    tidy = client.get(reverse("registry:run-tidy", args=["PUB-01", label, run.number]))
    assert tidy.status_code == 200 and tidy.content.count(b"\n") > 1
    api = client.get(f"/api/v1/registry/protocols/PUB-01/versions/{label}/runs/{run.number}")
    assert api.json()["input_sha256"] == run.inputs_id
    assert "immutable" in api["Cache-Control"]


def test_an_unpublished_run_answers_as_an_unknown_one(client, record):
    hidden = record["unpublished_run"].number
    label = record["version"].label
    for suffix in ("", "result.json", "tidy.csv"):
        a = client.get(f"/r/PUB-01/{label}/runs/{hidden}/{suffix}")
        b = client.get(f"/r/PUB-01/{label}/runs/999/{suffix}")
        assert a.status_code == b.status_code == 404
    api = "/api/v1/registry/protocols/PUB-01/versions"
    a = client.get(f"{api}/{label}/runs/{hidden}")
    b = client.get(f"{api}/{label}/runs/999")
    assert a.status_code == b.status_code == 404 and a.content == b.content
    # Its result blob is not a secret of its own: a rerun on the same inputs gives the same
    # bytes (BRIEF invariant 7), so it is the published run's result, public by that run.
    assert record["unpublished_run"].result_id == record["run"].result_id


def test_a_run_is_published_once_and_only_after_unsealing(record):
    with pytest.raises(ValidationError, match="already published"):
        run_publish(run=record["run"], user=record["pi"])


def test_a_sealed_run_cannot_be_published(client, record):
    late = record["late"]
    run = analysis_run_request(version=late, user=record["pi"])
    with pytest.raises(ValidationError):
        run_publish(run=run, user=record["pi"])


# -- the verifiable record, offline ------------------------------------------------------------


def _download(client, folder: Path, version) -> dict[str, Path]:
    code, label = version.protocol.code, version.label
    files = {
        "document": (f"/r/{code}/{label}/document.json", f"{code}-v{label}.json"),
        "log": (f"/r/{code}/log.jsonl", f"{code}-log.jsonl"),
        "checkpoints": (f"/r/{code}/checkpoints.json", f"{code}-checkpoints.json"),
        "key": ("/r/signing-key.json", "signing-key.json"),
        "verifier": ("/r/_tools/verify_registration.py", "verify_registration.py"),
        "log_verifier": ("/r/_tools/verify_log.py", "verify_log.py"),
    }
    paths = {}
    for name, (url, filename) in files.items():
        answer = client.get(url)
        assert answer.status_code == 200, url
        body = b"".join(answer.streaming_content) if answer.streaming else answer.content
        (folder / filename).write_bytes(body)
        paths[name] = folder / filename
    return paths


def _verify(folder: Path, paths: dict[str, Path], address: str) -> subprocess.CompletedProcess:
    # -I: no PYTHONPATH, no user site, not even the script's own folder added by Python; the
    # verifier finds verify_log.py next to itself. cwd is the clean folder.
    return subprocess.run(
        [
            sys.executable,
            "-I",
            str(paths["verifier"]),
            "--document",
            paths["document"].name,
            "--address",
            address,
            "--log",
            paths["log"].name,
            "--checkpoints",
            paths["checkpoints"].name,
            "--public-key",
            paths["key"].name,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
    )


def test_a_reader_proves_the_registration_offline_from_the_downloaded_files(
    client, record, tmp_path
):
    version = record["version"]
    paths = _download(client, tmp_path, version)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths.values())
    done = _verify(tmp_path, paths, version.sha256)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"the document hashes to its address {version.sha256}" in out
    assert "covered by a checkpoint signed at entry" in out
    assert "came before the first unsealing" in out
    assert out.strip().endswith("VERIFIED")


def test_the_offline_proof_fails_for_a_changed_document(client, record, tmp_path):
    version = record["version"]
    paths = _download(client, tmp_path, version)
    document = json.loads(paths["document"].read_bytes())
    document["sections"]["hypotheses"] += " (edited)"
    paths["document"].write_text(json.dumps(document))
    done = _verify(tmp_path, paths, version.sha256)
    assert done.returncode == 1
    assert "FAILED: the document hashes to" in done.stdout


def test_the_offline_proof_fails_for_a_rewritten_log(client, record, tmp_path):
    version = record["version"]
    paths = _download(client, tmp_path, version)
    lines = paths["log"].read_text().splitlines()
    entry = json.loads(lines[2])
    entry["rationale"] = "rewritten"
    lines[2] = json.dumps(entry)
    paths["log"].write_text("\n".join(lines) + "\n")
    done = _verify(tmp_path, paths, version.sha256)
    assert done.returncode == 1
    assert "the log is broken at entry" in done.stdout


def test_a_version_frozen_after_the_outcomes_were_seen_does_not_prove_before(
    client, record, tmp_path
):
    late = record["late"]
    paths = _download(client, tmp_path, late)
    done = _verify(tmp_path, paths, late.sha256)
    assert done.returncode == 1
    assert "the document hashes to its address" in done.stdout
    assert "FAILED: the freeze entry says outcome data had already been seen" in done.stdout


def test_the_public_log_withholds_what_concerns_an_unpublished_version(client, record, tmp_path):
    hidden, version = record["hidden"], record["version"]
    paths = _download(client, tmp_path, version)
    text = paths["log"].read_text()
    assert hidden.sha256 not in text and hidden.sha256[:16] not in text
    assert "A private rationale" not in text and f'"{hidden.label}"' not in text
    lines = [json.loads(line) for line in text.splitlines()]
    entries = [e for e in lines if "seq" in e]
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    withheld = [e for e in entries if e.get("withheld")]
    assert withheld and all(
        set(e) == {"protocol", "seq", "prev_hash", "hash", "withheld"} for e in withheld
    )
    # Imports, roles and the like are internal: only the registration's own acts are whole.
    assert {e["kind"] for e in entries if not e.get("withheld")} <= {
        "freeze",
        "amendment",
        "withdrawal",
        "registry",
        "outcome_unsealed",
        "exclusion",
        "deviation",
        "rerun",
        "reorder",
        "platform_loss",
        "analysis",
    }
    done = _verify(tmp_path, paths, version.sha256)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(withheld)} entries withheld" in done.stdout
    # The last entry is withheld, so its time is unknown: said as nothing, not as "None"; and
    # the checkpoint the export's first line repeats is one proof, said once.
    assert entries[-1].get("withheld") and " at None" not in done.stdout
    said = done.stdout.splitlines()
    assert len(said) == len(set(said)), done.stdout


def test_a_withheld_entry_is_still_bound_by_the_signed_tree(client, record, tmp_path):
    from apps.deviations import chain

    version = record["version"]
    paths = _download(client, tmp_path, version)
    lines = [json.loads(line) for line in paths["log"].read_text().splitlines()]
    at = next(i for i, e in enumerate(lines) if e.get("withheld"))
    lines[at]["hash"] = "0" * 64
    paths["log"].write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    done = _verify(tmp_path, paths, version.sha256)
    assert done.returncode == 1
    assert "the log is broken at entry" in done.stdout
    # An auditor's full export never accepts a withheld entry: only the registry's proof does.
    entries = [e for e in json.loads("[" + ",".join(json.dumps(x) for x in lines) + "]")]
    report = chain.verify_chain(e for e in entries if "seq" in e)
    assert not report.ok and "withheld" in report.reason


def test_a_public_amendment_of_an_unpublished_version_proves_offline(client, tmp_path):
    """v1.1 amends v1.0, and only v1.1 is published (the demo's OPB-01: v1.0 was set aside).
    v1.1's freeze is its amendment entry, which also names v1.0; withholding it left the reader
    with no freeze entry for v1.1's hash ("NOT VERIFIED"). The entry is public, since v1.1's own
    document already names v1.0's label and hash; v1.0's own entries stay withheld."""
    study = opb_study(code="AMD-01", evaluands=1)
    first, pi = study.version, study.pi
    draft = version_amend(version=first, user=pi)
    draft.amendment_rationale = "The margin defined before any data."
    draft.save()
    second = freeze(draft, pi)
    version_publish(version=second, user=pi, authors="A. Researcher")
    checkpoint_write(protocol=second.protocol, force=True)

    paths = _download(client, tmp_path, second)
    done = _verify(tmp_path, paths, second.sha256)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("VERIFIED")

    entries = [json.loads(line) for line in paths["log"].read_text().splitlines()]
    whole = [e for e in entries if "seq" in e and not e.get("withheld")]

    def names(entry, version):
        return any(r.get("type") == "version" and r.get("id") == version.pk for r in entry["refs"])

    assert [e["kind"] for e in whole if names(e, first)] == ["amendment"]
    assert all(names(e, second) for e in whole if names(e, first))
    assert any(e.get("withheld") for e in entries)  # v1.0's freeze, among others
