"""Domain errors: what services and selectors raise when a request cannot be met, without
knowing about HTTP. One mapping turns them into answers: ``apps.core.apis.exception_handler``
for the API and ``apps.core.middleware.DomainErrorMiddleware`` for pages.

- ``django.core.exceptions.ValidationError``: bad input (400 from the API, a form error on a page);
- ``django.core.exceptions.PermissionDenied``: the role does not allow it (403);
- ``NotFound``: no such object for this user (404), one generic message so a guessed id or
  token tells nothing;
- ``StateConflict``: the object exists and the user may see it, but its state does not allow
  this yet or any more (409), with a message that says which state.
"""


class NotFound(Exception):
    """No such object, as far as this user may know (answered 404)."""


class StateConflict(Exception):
    """The object's state does not allow the request (answered 409 with the message), e.g. the
    result of an analysis run that has not succeeded."""
