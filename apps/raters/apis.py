"""The API of blind rating: the reviewer's queue and tasks, and the PI's rubric and scoring.

Reviewer endpoints answer with the task's opaque token and its content only (see
``selectors.task_content``); unknown or foreign tokens answer 404 "No such task.".
"""

import json
import re
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.json import strict_constant
from rest_framework.views import APIView

from apps.accounts.authentication import (
    CachedTokenAuthentication,
    cached_token_credentials,
    request_token_key,
)
from apps.core.apis import JSONParser, PreboundSerializer, validated
from apps.core.inputs import json_problem, text_problem, whole_number
from apps.deviations.selectors import outcomes_visible
from apps.raters.access import get_rubric_version_for, get_scoring_version_for, get_task_for
from apps.raters.final import machine_dashboard
from apps.raters.models import AssignmentOutcome, RubricField, SkipReason
from apps.raters.selectors import (
    ANY_QUEUE,
    active_assignment,
    final_scores,
    own_score,
    reviewer_progress,
    reviewer_queues,
    rubric_document,
    scoring_dashboard,
    task_content,
    token_valid,
)
from apps.raters.services import (
    rubric_apply_template,
    rubric_field_add,
    rubric_field_delete,
    rubric_field_update,
    score_correct,
    score_submit_outcome,
    scoring_open,
    task_next,
    task_skip,
)
from apps.raters.services.lean import TokenRevoked
from apps.raters.values import reviewer_values


def _json_object(request) -> dict:
    """The request's body as a dict; a body that is JSON but not an object answers 400."""
    if not isinstance(request.data, dict):
        raise exceptions.ValidationError(
            {"detail": ["the body must be a JSON object of the field's attributes"]}
        )
    return dict(request.data)


# A study's queue id as ``study_queue_ensure`` makes it (``secrets.token_urlsafe``).
QUEUE_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


class _TaskOutput(serializers.Serializer):
    token = serializers.CharField()
    state = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True)
    prompt = serializers.CharField()
    response = serializers.CharField()
    instructions = serializers.CharField()
    key_units = serializers.ListField(child=serializers.DictField())
    # The output key is "fields". DRF's serializer metaclass pops declared fields off the class,
    # so this does not shadow Serializer.fields at run time; mypy sees only the class attribute.
    fields = serializers.ListField(child=serializers.DictField())  # type: ignore[assignment]
    # Seed 003: the pressure window a signals field is judged over (absent otherwise).
    pressure_window = serializers.DictField(required=False)
    your_score = serializers.DictField(allow_null=True)


def _task_payload(task, assignment, reviewer) -> dict:
    # A live reservation has no score yet (submitting ends it): no need to look one up.
    active = assignment.outcome == AssignmentOutcome.ACTIVE
    score = None if active else own_score(task=task, reviewer=reviewer)
    if score is not None:
        state = "scored"
    elif assignment.outcome == AssignmentOutcome.ACTIVE:
        state = "reserved"
    else:
        state = "expired"
    return {
        "token": task.token,
        "state": state,
        "expires_at": assignment.expires_at if state == "reserved" else None,
        **task_content(task),
        "your_score": None
        if score is None
        else reviewer_values(score.values, version_id=task.version_id),
    }


def _queue_choice(raw: object) -> str | None:
    """A study picked by its queue id (a ``StudyQueue.token``: URL-safe, at most 32 characters),
    or None for "any" (absent, empty or ``any``)."""
    if raw is None or raw == "" or raw == ANY_QUEUE:
        return None
    if not isinstance(raw, str) or not QUEUE_ID.fullmatch(raw):
        raise exceptions.ValidationError(
            {"queue": ["Give a study's queue id (from GET /api/v1/tasks/queues), or 'any'."]}
        )
    return raw


def _reserve(request, queue: str | None, *, release_held: bool = False) -> dict:
    """Reserve (or keep) the reviewer's next task: ``{"task": ... | None, "detail"?}``."""
    try:
        assignment = task_next(
            reviewer=request.user,
            queue=queue,
            token_key=request_token_key(request.auth),
            release_held=release_held,
        )
    except TokenRevoked:
        raise exceptions.AuthenticationFailed("Invalid token.") from None
    if assignment is None:
        return {"task": None, "detail": "No scoring task is open for you."}
    # The payload already has _TaskOutput's shape and JSON types (the schema documents it);
    # skipping the serializer saves building its fields on every reservation.
    payload = _task_payload(assignment.task, assignment, request.user)
    return {"task": payload}


class _JSONOnly(DefaultContentNegotiation):
    """JSON out without reading the Accept header (the queue's two hot endpoints); the body's
    parser is chosen by its Content-Type as everywhere (another type answers 415)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class QueueHotPath(APIView):
    """The settings of the reviewer queue's two hot endpoints (next, score), where a request's
    own CPU is the queue's throughput (docs/performance.md): token or session authentication,
    JSON only (no content negotiation, no browsable renderer), and no per-user rate throttle —
    a reviewer holds at most one reservation at a time, so a flood of requests cannot take tasks
    from other reviewers, and the throttle would cost two cache round trips per request. A
    request with an API token skips the middleware only pages use (``page_middleware``:
    ``apps.core.middleware.TokenAPIMiddleware``)."""

    authentication_classes = [CachedTokenAuthentication, SessionAuthentication]
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _JSONOnly
    throttle_classes: list = []
    page_middleware = False

    def dispatch(self, request, *args, **kwargs):
        """DRF's dispatch, with the request's authentication and body given in advance when
        that is certain without DRF's machinery (``_prepared``): a POST with the token of a
        user this process holds (``cached_token_credentials``) and a body DRF would parse to
        the same value (``_json_body``). The rest is DRF's own, in DRF's order: content
        negotiation, permissions and throttles (``initial``), the handler, the exception
        handler, ``finalize_response``. Anything else goes through DRF whole."""
        self.args, self.kwargs = args, kwargs
        prepared = _prepared(self, request) if request.method == "POST" else None
        if prepared is None:
            return super().dispatch(request, *args, **kwargs)
        self.request = prepared
        self.headers = self.default_response_headers
        try:
            self.initial(prepared, *args, **kwargs)
            response = self.post(prepared, *args, **kwargs)
        except Exception as exc:
            response = self.handle_exception(exc)
        self.response = self.finalize_response(prepared, response, *args, **kwargs)
        return self.response


class _Unread:
    """A body ``_json_body`` leaves to DRF's parser."""


_UNREAD = _Unread()
_JSON = "application/json"
# Stateless, so shared by every request of the hot path.
_TOKEN_AUTHENTICATION = CachedTokenAuthentication()
_JSON_PARSER = JSONParser()
# What JSONParser's ``json.load(…, parse_constant=strict_constant)`` decodes with, built once.
_DECODER = json.JSONDecoder(parse_constant=strict_constant)


def _json_body(request: HttpRequest) -> Any:
    """The request's body as DRF's ``request.data`` gives it, when that is certain without
    DRF's parser: ``{}`` for an empty body (whatever its type, as DRF gives it), or the value of
    a body of type exactly ``application/json`` that parses as JSONParser parses it (strict, in
    the request's encoding) and holds nothing it refuses (``json_problem``). ``_UNREAD`` for
    anything else: DRF then parses it (Django keeps the bytes read) and answers its errors."""
    meta = request.META
    length = meta.get("CONTENT_LENGTH")
    size = whole_number(length) if isinstance(length, str) and length == length.strip() else None
    if size is None:
        return _UNREAD
    if size == 0:
        return {}
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if meta.get("CONTENT_TYPE") != _JSON or (limit is not None and size > limit):
        return _UNREAD
    try:
        text = request.body.decode(request.encoding or settings.DEFAULT_CHARSET)
        data = _DECODER.decode(text)
    except (ValueError, RecursionError):
        return _UNREAD
    if json_problem(data) is not None:
        return _UNREAD
    return data


def _prepared(view: APIView, request: HttpRequest) -> Request | None:
    """DRF's Request for ``request`` with its user, token and body already set, as DRF would
    set them (see ``QueueHotPath.dispatch``); None when DRF must work them out itself."""
    if (
        getattr(request, "_force_auth_user", None) is not None
        or getattr(request, "_force_auth_token", None) is not None
    ):
        return None  # the test client's forced authentication: DRF's own
    credentials = cached_token_credentials(request.META.get("HTTP_AUTHORIZATION"))
    if credentials is None:
        return None
    data = _json_body(request)
    if data is _UNREAD:
        return None
    prepared = Request(
        request,
        parsers=[_JSON_PARSER],
        authenticators=[_TOKEN_AUTHENTICATION],
        negotiator=view.get_content_negotiator(),
        parser_context=view.get_parser_context(request),
    )
    # What DRF's Request holds once it has authenticated (``_authenticate``) and parsed
    # (``_load_data_and_files``) a JSON body: its own private state.
    state: Any = prepared
    state._authenticator = _TOKEN_AUTHENTICATION
    prepared.user, prepared.auth = credentials
    state._data = state._full_data = data
    state._files = MultiValueDict()
    return prepared


class TaskNextApi(QueueHotPath):
    """POST: reserve your next scoring task (or get the one you hold), from one study
    (``{"queue": "<id from /tasks/queues>"}``) or any (``"any"``, the default). You hold one
    task at a time: while you hold one, POST returns it, whichever study you ask for, unless
    you send ``"release": true``, which gives it back to the pool first (to move to another
    study). GET reserves nothing: it shows the task you hold, if any."""

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def post(self, request):
        body = request.data if request.data is not None else {}
        if not isinstance(body, dict):
            raise exceptions.ValidationError(
                {"detail": ['The body must be a JSON object ({"queue": …}) or empty.']}
            )
        queue = _queue_choice(
            body["queue"] if "queue" in body else request.query_params.get("queue")
        )
        release = body.get("release", False)
        if not isinstance(release, bool):
            raise exceptions.ValidationError({"release": ["Give true or false."]})
        return Response(_reserve(request, queue, release_held=release))

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request):
        # The token cache holds a token until this process hears of its revoke; reading the held
        # task checks the token itself (POST checks it in the claim's own statement).
        if not token_valid(reviewer=request.user, token_key=request_token_key(request.auth)):
            raise exceptions.AuthenticationFailed("Invalid token.")
        assignment = active_assignment(reviewer=request.user)
        if assignment is None:
            return Response(
                {"task": None, "detail": "You hold no task: POST to this address to reserve one."}
            )
        payload = _task_payload(assignment.task, assignment, request.user)
        return Response({"task": _TaskOutput(payload).data})


class TaskQueuesApi(APIView):
    """The studies you have open tasks in, by the neutral names their PIs gave them: pass one's
    ``queue`` to POST /tasks/next, or ``"any"``."""

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response({"queues": reviewer_queues(reviewer=request.user), "any": ANY_QUEUE})


class TaskDetailApi(APIView):
    """One task you reserved: the prompt, the response, the key and the rubric's fields."""

    @extend_schema(responses=_TaskOutput)
    def get(self, request, token: str):
        task, assignment = get_task_for(user=request.user, token=token)
        return Response(_TaskOutput(_task_payload(task, assignment, request.user)).data)


class TaskProgressApi(APIView):
    """Your progress: scores done, reservations held, done + held + still open to you, your pace
    (scores per hour over your latest scores) and the same per study (``studies``)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response(reviewer_progress(reviewer=request.user))


class TaskSkipApi(APIView):
    """Skip a task you hold, with an optional reason (``cannot_judge``, ``content_problem``,
    ``other``): it goes back to the pool for other reviewers, never to you; nothing is scored.
    With ``"next": true`` the reply carries your next task as POST /tasks/next answers."""

    @extend_schema_serializer(component_name="TaskSkipInput")
    class InputSerializer(serializers.Serializer):
        reason = serializers.ChoiceField(
            choices=SkipReason.choices, required=False, allow_blank=True, default=""
        )
        next = serializers.BooleanField(required=False, default=False)
        queue = serializers.CharField(required=False, allow_blank=True, max_length=32)

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request, token: str):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        assignment = task_skip(
            task_token=token, reviewer=request.user, reason=data.validated_data["reason"]
        )
        body: dict = {
            "task": token,
            "skipped_at": assignment.ended_at,
            "reason": assignment.skip_reason,
        }
        if data.validated_data["next"]:
            body["next"] = _reserve(request, _queue_choice(data.validated_data.get("queue")))
        return Response(body, status=status.HTTP_201_CREATED)


class _ScoreOutput(serializers.Serializer):
    task = serializers.CharField(source="task.token")
    values = serializers.DictField()
    submitted_at = serializers.DateTimeField()
    seconds_spent = serializers.IntegerField(allow_null=True)
    correction_reason = serializers.CharField()


_INT_MAX = 2**31 - 1


def _score_input(data: Any) -> dict[str, Any] | None:
    """What ``TaskScoreApi.InputSerializer`` validates ``data`` to, when every field is already
    in the form it validates to — a JSON object with ``values`` an object, ``idempotency_key``
    1–64 characters with no white space to trim, and ``seconds_spent``, ``next`` and ``queue``
    absent or of their own type and range (what the scoring page and a client send); None for
    anything else, which the serializer checks and answers with its errors. Checked equal to
    the serializer's answer in ``tests/raters/test_queue_hot_path.py``."""
    if type(data) is not dict:
        return None
    values = data.get("values")
    key = data.get("idempotency_key")
    if (
        type(values) is not dict
        or type(key) is not str
        or not 0 < len(key) <= 64
        or key.strip() != key
        or text_problem(key) is not None
    ):
        return None
    seconds = data.get("seconds_spent")
    if seconds is not None and not (type(seconds) is int and 0 <= seconds <= _INT_MAX):
        return None
    chained = data.get("next", False)
    if type(chained) is not bool:
        return None
    # DictField's child takes any value as it is: the values are a copy of the object.
    result = {"values": dict(values), "idempotency_key": key, "next": chained}
    if "seconds_spent" in data:
        result["seconds_spent"] = seconds
    if "queue" in data:
        queue = data["queue"]
        if (
            type(queue) is not str
            or len(queue) > 32
            or queue.strip() != queue
            or text_problem(queue) is not None
        ):
            return None
        result["queue"] = queue
    return result


class TaskScoreApi(QueueHotPath):
    """Submit your score for a task you hold. Send an idempotency key: a repeat stores nothing
    (201 the first time, 200 with the stored score on a repeat). With ``"next": true`` the reply
    also carries your next task (``"next": {"task": ...}``, from ``queue`` or any study)."""

    @extend_schema_serializer(component_name="TaskScoreInput")
    class InputSerializer(PreboundSerializer):
        values = serializers.DictField()
        idempotency_key = serializers.CharField(max_length=64)
        seconds_spent = serializers.IntegerField(
            min_value=0, max_value=2**31 - 1, required=False, allow_null=True
        )
        # Submit and next in one request: the reply's "next" is what POST /tasks/next answers.
        next = serializers.BooleanField(required=False, default=False)
        queue = serializers.CharField(required=False, allow_blank=True, max_length=32)

    @extend_schema(request=InputSerializer, responses=_ScoreOutput)
    def post(self, request, token: str):
        data = _score_input(request.data)
        if data is None:
            data = validated(self.InputSerializer, request.data)
        try:
            score, created = score_submit_outcome(
                task_token=token,
                reviewer=request.user,
                values=data["values"],
                idempotency_key=data["idempotency_key"],
                seconds_spent=data.get("seconds_spent"),
                token_key=request_token_key(request.auth),
            )
        except TokenRevoked:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        body = {
            "task": token,
            "values": reviewer_values(score.values, version_id=score.version_id),
            "submitted_at": score.submitted_at,
            "seconds_spent": score.seconds_spent,
            "correction_reason": score.correction_reason,
        }
        if data.get("next"):
            # The score is committed; the next reservation is its own transaction.
            body = {
                **body,
                "next": _reserve(request, _queue_choice(data.get("queue"))),
            }
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class TaskCorrectionApi(APIView):
    """Correct your score for a task: a new record with a reason; the original is kept."""

    @extend_schema_serializer(component_name="TaskCorrectionInput")
    class InputSerializer(serializers.Serializer):
        values = serializers.DictField()
        reason = serializers.CharField()

    @extend_schema(request=InputSerializer, responses=_ScoreOutput)
    def post(self, request, token: str):
        data = validated(self.InputSerializer, request.data)
        task, _ = get_task_for(user=request.user, token=token)
        score = own_score(task=task, reviewer=request.user)
        if score is None:
            return Response(
                {"detail": "You have not scored this task yet."}, status=status.HTTP_400_BAD_REQUEST
            )
        correction = score_correct(
            score=score,
            reviewer=request.user,
            values=data["values"],
            reason=data["reason"],
        )
        return Response(_ScoreOutput(correction).data, status=status.HTTP_201_CREATED)


# The PI's side.


class RubricApi(APIView):
    """The version's rubric as it goes into the frozen document (PI and editors)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, version_id: int):
        version = get_rubric_version_for(user=request.user, pk=version_id)
        return Response({"rubric": rubric_document(version)})


class RubricTemplateApi(APIView):
    """Replace a draft's rubric with a kind's preset (``opb``, ``xstest``, ``fidelity``, …)."""

    @extend_schema_serializer(component_name="RubricTemplateInput")
    class InputSerializer(serializers.Serializer):
        template = serializers.CharField()

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request, version_id: int):
        version = get_rubric_version_for(user=request.user, pk=version_id)
        data = validated(self.InputSerializer, request.data)
        rubric_apply_template(version=version, template=data["template"])
        return Response({"rubric": rubric_document(version)}, status=status.HTTP_201_CREATED)


class RubricFieldsApi(APIView):
    """Add a field to a draft's rubric (its attributes as in the rubric document)."""

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def post(self, request, version_id: int):
        version = get_rubric_version_for(user=request.user, pk=version_id)
        rubric = getattr(version, "rubric", None)
        if rubric is None:
            return Response(
                {"detail": "The version has no rubric yet: apply a template first."},
                status=status.HTTP_400_BAD_REQUEST,
            )
        rubric_field_add(rubric=rubric, spec=_json_object(request))
        return Response({"rubric": rubric_document(version)}, status=status.HTTP_201_CREATED)


class RubricFieldApi(APIView):
    """Change (PATCH) or remove (DELETE) one field of a draft's rubric."""

    def _field(self, request, version_id: int, name: str) -> RubricField:
        version = get_rubric_version_for(user=request.user, pk=version_id)
        field = RubricField.objects.filter(version=version, name=name).first()
        if field is None:
            from django.http import Http404

            raise Http404("No such rubric field.")
        return field

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def patch(self, request, version_id: int, name: str):
        field = self._field(request, version_id, name)
        rubric_field_update(field=field, changes=_json_object(request))
        return Response({"rubric": rubric_document(field.version)})

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def delete(self, request, version_id: int, name: str):
        field = self._field(request, version_id, name)
        rubric_field_delete(field=field)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ScoringOpenApi(APIView):
    """Open scoring of a frozen version: k tasks per response (PI). Repeatable after imports."""

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request, version_id: int):
        version = get_scoring_version_for(user=request.user, pk=version_id)
        created = scoring_open(version=version, user=request.user)
        return Response({"created": created}, status=status.HTTP_201_CREATED)


class ScoringDashboardApi(APIView):
    """Scoring progress, per-reviewer counts and — once outcomes are unsealed — reliability."""

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request, version_id: int):
        version = get_scoring_version_for(user=request.user, pk=version_id)
        return Response({**scoring_dashboard(version), "machine": machine_dashboard(version)})


class FinalScoresApi(APIView):
    """Per response: the originals, the adjudicated value and the final value (once unsealed)."""

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request, version_id: int):
        version = get_scoring_version_for(user=request.user, pk=version_id)
        if not outcomes_visible(version):
            return Response(
                {"detail": "Outcomes are sealed: unseal them to read the final scores."},
                status=status.HTTP_403_FORBIDDEN,
            )
        return Response({"responses": final_scores(version)})
