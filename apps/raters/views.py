from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.items.selectors import harm_reviews_pending_for


@login_required
def queue(request: HttpRequest) -> HttpResponse:
    """The reviewer's queue: their scoring tasks (built by the rating work)."""
    # Harm-constancy reviews (apps.items) are a section of their own, from
    # templates/items/harm_review_queue.html.
    harm_reviews = harm_reviews_pending_for(request.user)
    return render(request, "raters/queue.html", {"harm_reviews": harm_reviews})
