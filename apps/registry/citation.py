"""Citation metadata of a published version: a formatted reference, BibTeX, CSL-JSON, DataCite
(schema 4.5, validated with the ``datacite`` package) and schema.org JSON-LD.

The identifier is the version's stable URL (``/r/<code>/<label>/``); its SHA-256 is an alternate
identifier. Minting a DOI needs a DataCite member's credentials: ``datacite_metadata`` is the
``attributes`` object of DataCite's REST API (https://support.datacite.org/docs/api-create-dois),
which a deployment holding credentials could send unchanged, adding only its ``doi``/``prefix``
and ``event: "publish"`` (``docs/registry.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from datacite import schema45

PUBLISHER = "Preregistry"
DATACITE_SCHEMA_VERSION = "http://datacite.org/schema/kernel-4"


@dataclass(frozen=True)
class Citable:
    """What a citation says about one published version."""

    code: str
    title: str
    label: str
    sha256: str
    authors: str  # '' when anonymised
    url: str  # the stable URL: the identifier
    public_since: datetime
    frozen_at: datetime
    supersedes_url: str | None = None

    @property
    def year(self) -> int:
        return self.public_since.year

    @property
    def author_list(self) -> list[str]:
        names = [name.strip() for name in self.authors.replace(";", ",").split(",")]
        return [name for name in names if name] or ["Anonymous"]

    @property
    def full_title(self) -> str:
        return f"{self.code} v{self.label}: {self.title}"


def reference(item: Citable) -> str:
    """A formatted reference (APA-like): authors (year). title [Preregistration]. publisher.
    URL. SHA-256."""
    authors = ", ".join(item.author_list)
    return (
        f"{authors} ({item.year}). {item.full_title} [Preregistration, version {item.label}]. "
        f"{PUBLISHER}. {item.url} (SHA-256 {item.sha256})"
    )


def _bibtex_escape(text: str) -> str:
    for char in "\\{}%&$#_^~":
        text = text.replace(char, "\\" + char if char not in "\\^~" else "{}")
    return text


def bibtex(item: Citable) -> str:
    """A BibTeX ``@misc`` entry keyed ``<code>_v<label>``."""
    key = f"{item.code}_v{item.label}".replace(".", "_").replace("-", "_")
    fields = {
        "author": " and ".join(_bibtex_escape(name) for name in item.author_list),
        "title": "{" + _bibtex_escape(item.full_title) + "}",
        "year": str(item.year),
        "publisher": PUBLISHER,
        "howpublished": "Preregistration",
        "version": item.label,
        "url": item.url,
        "note": f"SHA-256 {item.sha256}",
    }
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields.items())
    return f"@misc{{{key},\n{body}\n}}\n"


def csl_json(item: Citable) -> list[dict[str, Any]]:
    """CSL-JSON (a list of one item), as citeproc processors and Zotero read it."""
    issued = item.public_since
    return [
        {
            "id": f"{item.code}-v{item.label}",
            "type": "document",
            "genre": "Preregistration",
            "title": item.full_title,
            "author": [{"literal": name} for name in item.author_list],
            "issued": {"date-parts": [[issued.year, issued.month, issued.day]]},
            "publisher": PUBLISHER,
            "version": item.label,
            "URL": item.url,
            "note": f"SHA-256 {item.sha256}",
        }
    ]


def datacite_metadata(item: Citable) -> dict[str, Any]:
    """DataCite metadata (schema 4.5 JSON; see the module docstring for sending it)."""
    metadata: dict[str, Any] = {
        "url": item.url,
        "creators": [{"name": name, "nameType": "Personal"} for name in item.author_list],
        "titles": [{"title": item.full_title}],
        "publisher": {"name": PUBLISHER},
        "publicationYear": str(item.year),
        "types": {"resourceTypeGeneral": "StudyRegistration", "resourceType": "Preregistration"},
        "version": item.label,
        "alternateIdentifiers": [
            {"alternateIdentifier": item.url, "alternateIdentifierType": "URL"},
            {"alternateIdentifier": item.sha256, "alternateIdentifierType": "SHA-256"},
        ],
        "dates": [
            {"date": item.frozen_at.date().isoformat(), "dateType": "Created"},
            {"date": item.public_since.date().isoformat(), "dateType": "Issued"},
        ],
        "formats": ["application/json"],
        "schemaVersion": DATACITE_SCHEMA_VERSION,
    }
    if item.supersedes_url:
        metadata["relatedIdentifiers"] = [
            {
                "relatedIdentifier": item.supersedes_url,
                "relatedIdentifierType": "URL",
                "relationType": "IsNewVersionOf",
            }
        ]
    return metadata


def datacite_valid(metadata: dict[str, Any]) -> bool:
    """Whether ``metadata`` validates against DataCite's JSON schema 4.5 (``datacite``)."""
    return bool(schema45.validate(metadata))


def datacite_errors(metadata: dict[str, Any]) -> list[str]:
    """Every schema error of ``metadata``, as text (empty when valid)."""
    return [error.message for error in schema45.validator.iter_errors(metadata)]


def json_ld(item: Citable) -> dict[str, Any]:
    """schema.org JSON-LD for the version's page (a ``CreativeWork`` with its hash)."""
    return {
        "@context": "https://schema.org",
        "@type": "CreativeWork",
        "additionalType": "Preregistration",
        "@id": item.url,
        "url": item.url,
        "name": item.full_title,
        "version": item.label,
        "author": [{"@type": "Person", "name": name} for name in item.author_list]
        if item.authors
        else [],
        "publisher": {"@type": "Organization", "name": PUBLISHER},
        "dateCreated": item.frozen_at.isoformat(),
        "datePublished": item.public_since.isoformat(),
        "identifier": [
            item.url,
            {"@type": "PropertyValue", "propertyID": "SHA-256", "value": item.sha256},
        ],
    }
