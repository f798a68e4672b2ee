from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.protocols.forms import ProtocolCreateForm
from apps.protocols.selectors import protocols_for
from apps.protocols.services import protocol_create


@login_required
def protocol_list(request: HttpRequest) -> HttpResponse:
    return render(
        request, "protocols/protocol_list.html", {"protocols": protocols_for(user=request.user)}
    )


@login_required
@require_http_methods(["GET", "POST"])
def protocol_new(request: HttpRequest) -> HttpResponse:
    form = ProtocolCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            protocol = protocol_create(user=request.user, **form.cleaned_data)
        except ValidationError as error:
            for field, errors in error.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(request, f"Protocol {protocol.code} created; you are its PI.")
            return redirect("protocols:list")
    return render(request, "protocols/protocol_new.html", {"form": form})
