from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def queue(request: HttpRequest) -> HttpResponse:
    """The reviewer's queue: their scoring tasks (built by the rating work)."""
    return render(request, "raters/queue.html", {})
