"""API token authentication without a database round trip on the reviewer queue's hot path.

DRF's ``TokenAuthentication`` reads the token and its user on every request (one query, one
join). ``CachedTokenAuthentication`` keeps ``key → user`` in the process after the first read.
It is safe only together with the check that the queue's own statements make: the claim and the
score write verify, inside the same SQL statement that does the work, that the token still
exists, its user is active and the reviewer role is still held (``apps.raters.services.lean``).
So a token deleted, a user deactivated or a role removed in any process stops working at the
very next request, whatever this cache holds. The views using this class pass the key on
(``request.auth.key``) for that check; no other view uses it.

Within the process the cache is also emptied on revoke (a token deleted or a user saved), so that
memory is not kept for a revoked key; across processes the statement's check is what counts.
"""

import copy
import threading
from collections import OrderedDict
from typing import Any

from django.db.models.signals import post_delete, post_save
from drf_spectacular.authentication import TokenScheme
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from apps.accounts.models import User

# Keys a process remembers (least recently used first out).
_MAX_KEYS = 10_000

_cache: "OrderedDict[str, tuple[User, Token]]" = OrderedDict()
_lock = threading.Lock()


class CachedTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, the user read once per process (see the module's note on
    why this is safe only where the work's statement re-checks the key)."""

    def authenticate_credentials(self, key: str) -> tuple[User, Token]:
        found = _cached(key)
        if found is not None:
            return found
        user, token = super().authenticate_credentials(key)
        with _lock:
            _cache[key] = (_copy(user), token)
            while len(_cache) > _MAX_KEYS:
                _cache.popitem(last=False)
        return user, token


def _cached(key: str) -> tuple[User, Token] | None:
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
    if found is None:
        return None
    user, token = found
    return _copy(user), token


def _copy(user: User) -> User:
    """A copy per request, so that a view that changes request.user changes no other request:
    what ``copy.copy`` makes of a model instance (its attributes, and its ``_state`` with its
    own cache of related objects, as ``Model.__getstate__`` copies them), without going through
    pickling's protocol (about 50 Python calls a request)."""
    clone = User.__new__(User)
    clone.__dict__.update(user.__dict__)
    clone._state = copy.copy(user._state)
    clone._state.fields_cache = user._state.fields_cache.copy()
    return clone


def cached_token_credentials(header: str | None) -> tuple[User, Token] | None:
    """What ``CachedTokenAuthentication`` answers to an ``Authorization`` header of the form
    ``Token <key>`` whose key this process holds, without DRF's authentication machinery; None
    for any other header (absent, another scheme, malformed, not ASCII) or a key not held, which
    the full authentication then answers (reading the key, or refusing it)."""
    if header is None or not header.isascii():
        return None
    # Split as TokenAuthentication splits it: as bytes (str.split also splits at \x1c–\x1f).
    parts = header.encode().split()
    if len(parts) != 2 or parts[0].lower() != _KEYWORD:
        return None
    return _cached(parts[1].decode())


_KEYWORD = CachedTokenAuthentication.keyword.lower().encode()


class CachedTokenScheme(TokenScheme):
    """The same ``Authorization: Token <key>`` header in the OpenAPI schema, under its own name
    (drf-spectacular keeps one component per authentication class)."""

    target_class = "apps.accounts.authentication.CachedTokenAuthentication"
    name = "queueTokenAuth"
    priority = 1


def token_cache_forget(*, key: str | None = None, user_id: int | None = None) -> None:
    """Drop one key, every key of one user, or (no argument) everything from this process."""
    with _lock:
        if key is None and user_id is None:
            _cache.clear()
            return
        for cached_key in [
            k
            for k, (u, _) in _cache.items()
            if k == key or (user_id is not None and u.pk == user_id)
        ]:
            del _cache[cached_key]


def request_token_key(auth: Any) -> str | None:
    """The token key of a DRF request's ``request.auth`` (None for a session)."""
    return auth.key if isinstance(auth, Token) else None


def _token_deleted(sender: type, instance: Token, **kwargs: Any) -> None:
    token_cache_forget(key=instance.key)


def _user_saved(sender: type, instance: User, **kwargs: Any) -> None:
    token_cache_forget(user_id=instance.pk)


post_delete.connect(_token_deleted, sender=Token, dispatch_uid="accounts.token_cache.token")
post_save.connect(_user_saved, sender=User, dispatch_uid="accounts.token_cache.user")
