"""Pages answer domain errors (``apps.core.errors``) as the API does."""

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse

from apps.core.errors import NotFound


class DomainErrorMiddleware:
    """A ``NotFound`` raised by a service or selector under a view becomes Django's 404."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        if isinstance(exception, NotFound):
            raise Http404(str(exception)) from exception
