"""Static files storage for production."""

import logging

from django.contrib.staticfiles.storage import StaticFilesStorage
from whitenoise.storage import CompressedManifestStaticFilesStorage

logger = logging.getLogger(__name__)


class ForgivingManifestStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """Whitenoise's compressed, hashed storage, except that a file missing from the manifest (a
    deployment that did not run ``collectstatic``) gets its plain ``STATIC_URL`` address and a
    logged error instead of a ``ValueError``: otherwise every page that names a static file,
    the 404 page included, would answer 500."""

    manifest_strict = False

    def url(self, name: str | None, force: bool = False) -> str:
        try:
            return super().url(name, force)
        except ValueError:
            logger.error("Static file %r is not collected: run manage.py collectstatic", name)
            return StaticFilesStorage.url(self, name)
