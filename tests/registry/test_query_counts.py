"""The public pages make a bounded number of queries, whatever the protocol's size: the same
count for a protocol with 2 public versions and 10 log entries as for one with 20 versions and
10,000 entries.

The 18 extra versions and the entries are rows written in bulk (not through the freeze gate and
``deviation_append``): what is measured is the pages' reads, and the suite must stay fast. Each
extra version carries a real frozen document (the gate-frozen version's, relabelled) as its blob.
"""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core.canonical import canonical_json, sha256_hex
from apps.deviations.models import LogEntry
from apps.protocols.models import Blob, ProtocolVersion
from apps.registry.models import Publication
from apps.registry.services import version_publish

pytestmark = pytest.mark.django_db


def _grow(frozen, pi, *, versions: int, entries: int) -> None:
    base = json.loads(bytes(Blob.objects.get(sha256=frozen.sha256).content))
    previous = ProtocolVersion.objects.filter(protocol=frozen.protocol).order_by("-pk").first()
    now = timezone.now()
    start = ProtocolVersion.objects.filter(protocol=frozen.protocol).count()
    for n in range(start, start + versions):
        document = {**base, "version": f"{n + 1}.0"}
        content = canonical_json(document)
        digest = sha256_hex(content)
        Blob.objects.create(sha256=digest, content=content, size=len(content))
        version = ProtocolVersion.objects.create(
            protocol=frozen.protocol,
            label=f"{n + 1}.0",
            state="frozen",
            sha256=digest,
            frozen_at=now + timedelta(seconds=n),
            supersedes=previous,
            amendment_rationale=f"Amendment {n}.",
            created_by=pi,
        )
        Publication.objects.create(
            version=version, published_by=pi, public_since=now, authors="A. Author"
        )
        previous = version
    last = LogEntry.objects.filter(protocol=frozen.protocol).order_by("-seq").first()
    LogEntry.objects.bulk_create(
        [
            LogEntry(
                protocol=frozen.protocol,
                protocol_code=frozen.protocol.code,
                seq=last.seq + i,
                recorded_at=now,
                actor_name="system",
                kind="amendment" if i % 100 == 0 else "deviation",
                rationale=f"Entry {i}.",
                refs=[],
                outcome_visible=False,
                prev_hash="0" * 64,
                hash=f"{last.seq + i:064x}",
            )
            for i in range(1, entries + 1)
        ],
        batch_size=2000,
    )


def _counts(client, code: str, labels: list[str]) -> dict[str, int]:
    urls = [
        "/r/",
        "/r/feed.atom",
        f"/r/{code}/",
        *(f"/r/{code}/{label}/" for label in labels),
        f"/api/v1/registry/protocols/{code}",
        f"/api/v1/registry/protocols/{code}/versions/{labels[-1]}",
        f"/r/{code}/{labels[0]}/datacite.json",
    ]
    counts = {}
    for url in urls:
        with CaptureQueriesContext(connection) as queries:
            answer = client.get(url)
        assert answer.status_code == 200, url
        counts[url.replace(labels[0], "FIRST").replace(labels[-1], "LAST")] = len(queries)
    return counts


def test_public_pages_make_the_same_number_of_queries_for_2_or_20_versions(
    client, frozen, study_pi
):
    version_publish(version=frozen, user=study_pi)
    code = frozen.protocol.code
    _grow(frozen, study_pi, versions=1, entries=10)
    small = _counts(client, code, ["1.0", "2.0"])
    _grow(frozen, study_pi, versions=18, entries=10_000)
    assert ProtocolVersion.objects.filter(protocol=frozen.protocol).count() == 20
    assert LogEntry.objects.filter(protocol=frozen.protocol).count() > 10_000
    large = _counts(client, code, ["1.0", "20.0"])
    assert large == small
    assert max(large.values()) <= 12, large


def test_the_index_is_paged_and_searchable_by_the_api_too(client, study_pi):
    from tests.factories import ProtocolFactory

    now = timezone.now()
    for n in range(27):
        protocol = ProtocolFactory(code=f"IDX-{n:02d}", title=f"Indexed {n}", created_by=study_pi)
        version = ProtocolVersion.objects.create(
            protocol=protocol,
            label="1.0",
            state="frozen",
            sha256=f"{n:064x}",
            frozen_at=now,
            created_by=study_pi,
        )
        Publication.objects.create(
            version=version,
            published_by=study_pi,
            public_since=now + timedelta(minutes=n),
            authors="A. Author",
        )
    first = client.get("/r/").content.decode()
    assert "IDX-26" in first and "IDX-02" in first and "IDX-01" not in first  # newest first
    assert "Page 1 of 2" in first
    second = client.get("/r/", {"page": 2}).content.decode()
    assert "IDX-01" in second and "IDX-00" in second and "IDX-26" not in second
    api = client.get("/api/v1/registry/protocols", {"page": 2})
    assert [row["code"] for row in api.json()] == ["IDX-01", "IDX-00"]
    assert api["X-Total-Count"] == "27"
    assert [
        r["code"] for r in client.get("/api/v1/registry/protocols", {"q": "Indexed 13"}).json()
    ] == ["IDX-13"]
