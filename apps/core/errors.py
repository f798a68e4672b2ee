"""Domain errors: what services and selectors raise when a request cannot be met, without
knowing about HTTP. One mapping turns them into answers: ``apps.core.apis.exception_handler``
for the API and ``apps.core.middleware.DomainErrorMiddleware`` for pages.

- ``django.core.exceptions.ValidationError``: bad input (400 from the API, a form error on a page);
- ``django.core.exceptions.PermissionDenied``: the role does not allow it (403);
- ``NotFound``: no such object for this user (404), one generic message so a guessed id or
  token tells nothing.
"""


class NotFound(Exception):
    """No such object, as far as this user may know (answered 404)."""
