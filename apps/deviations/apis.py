"""The deviation log's API: the feed, verification, manual deviations and the outcome seal."""

import base64

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import CachedTokenAuthentication
from apps.accounts.models import Role
from apps.core.apis import validated
from apps.core.lean import LeanReadApi
from apps.deviations import chain
from apps.deviations.checkpoints import (
    checkpoint_write,
    checkpoints_checked,
    entry_in_signed_tree,
    latest_checkpoint,
    signing_key,
)
from apps.deviations.models import MANUAL_KINDS, EntryKind
from apps.deviations.selectors import (
    DEVIATION_WRITER_ROLES,
    LOG_READER_ROLES,
    chain_verify,
    entry_dict,
    log_entries,
    unsealing_for,
)
from apps.deviations.services import (
    deviation_record,
    format_timestamp,
    outcome_unseal,
)
from apps.deviations.tree import consistency_proof, inclusion_proof, log_size
from apps.protocols.access import get_protocol_for, get_version_for
from apps.protocols.models import ProtocolVersion
from apps.protocols.refs import version_ref


@extend_schema_serializer(component_name="LogEntry")
class EntrySerializer(serializers.Serializer):
    """One entry exactly as exported and hashed (``docs/deviation-log.md``)."""

    protocol = serializers.CharField()
    seq = serializers.IntegerField()
    recorded_at = serializers.CharField(help_text="UTC, microseconds: 2026-11-30T01:50:00.000123Z")
    occurred_on = serializers.DateField(allow_null=True)
    actor = serializers.CharField()
    kind = serializers.CharField()
    rationale = serializers.CharField()
    refs = serializers.ListField(child=serializers.DictField())
    outcome_visible = serializers.BooleanField()
    prev_hash = serializers.CharField()
    hash = serializers.CharField()

    def to_representation(self, instance):
        return instance  # already the exported dict; re-rendering could change what is hashed


class LogFeedApi(APIView):
    """A protocol's log as a JSON feed: newest first, or from ``after`` onwards in order."""

    @extend_schema_serializer(component_name="LogFeedQuery")
    class InputSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(choices=EntryKind.choices, required=False)
        actor = serializers.CharField(required=False)
        date_from = serializers.DateField(required=False)
        date_to = serializers.DateField(required=False)
        after = serializers.IntegerField(min_value=0, required=False)
        before = serializers.IntegerField(min_value=1, required=False)
        limit = serializers.IntegerField(min_value=1, max_value=1000, default=100)

        def validate(self, data):
            if "after" in data and "before" in data:
                raise serializers.ValidationError("Give after or before, not both.")
            return data

    @extend_schema_serializer(component_name="LogFeedPage")
    class OutputSerializer(serializers.Serializer):
        protocol = serializers.CharField()
        entries = EntrySerializer(many=True)
        next = serializers.CharField(allow_null=True, help_text="The next page's URL, or null.")

    @extend_schema(
        parameters=[InputSerializer],
        responses=OutputSerializer,
        description="Entries newest first (``before=SEQ`` pages back), or, with ``after=SEQ``, "
        "the entries after SEQ in chain order (for following the log). Filters: kind, actor, "
        "date_from, date_to (UTC days, inclusive). Auditors, PIs and editors.",
    )
    def get(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
        query = validated(self.InputSerializer, request.query_params)
        limit = query["limit"]
        following = "after" in query
        entries = log_entries(protocol_id=protocol.pk, filters=query, newest_first=not following)
        if following:
            entries = entries.filter(seq__gt=query["after"])
        elif "before" in query:
            entries = entries.filter(seq__lt=query["before"])
        page = list(entries[: limit + 1])
        more, page = len(page) > limit, page[:limit]
        next_url = None
        if more:
            cursor = request.query_params.copy()
            cursor.pop("after", None)
            cursor.pop("before", None)
            cursor["after" if following else "before"] = page[-1].seq
            next_url = request.build_absolute_uri(
                reverse("deviations-api:log", kwargs={"code": protocol.code})
                + "?"
                + cursor.urlencode()
            )
        data = {
            "protocol": protocol.code,
            "entries": [entry_dict(entry) for entry in page],
            "next": next_url,
        }
        return Response(self.OutputSerializer(data).data)


class LogVerifyApi(APIView):
    """Recompute a protocol's chain now and name the first broken entry."""

    @extend_schema_serializer(component_name="LogVerification")
    class OutputSerializer(serializers.Serializer):
        protocol = serializers.CharField()
        ok = serializers.BooleanField()
        entries = serializers.IntegerField()
        verified_through = serializers.IntegerField(allow_null=True)
        verified_through_at = serializers.CharField(allow_null=True)
        head_hash = serializers.CharField(allow_null=True)
        broken_at = serializers.IntegerField(allow_null=True)
        reason = serializers.CharField(allow_blank=True)
        summary = serializers.CharField()
        tree_size = serializers.IntegerField(help_text="Entries in the Merkle tree verified.")
        root_hash = serializers.CharField(
            allow_null=True, help_text="Its RFC 6962 root, base64 (as in a checkpoint)."
        )
        skipped_checkpoints = serializers.ListField(
            child=serializers.DictField(),
            help_text="Stored checkpoints that do not verify against the configured keys: "
            "reported and not used.",
        )
        checked_at = serializers.CharField()

    @extend_schema(responses=OutputSerializer)
    def get(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
        valid, invalid = checkpoints_checked(protocol)
        report = chain_verify(protocol=protocol, checkpoints=[c.document for c in valid])
        data = {
            **report.as_dict(),
            "skipped_checkpoints": [
                {"id": checkpoint.pk, "size": checkpoint.seq, "reason": why}
                for checkpoint, why in invalid
            ],
            "checked_at": format_timestamp(timezone.now()),
        }
        return Response(self.OutputSerializer(data).data)


MAX_SEQ = 2**31 - 1  # a PositiveIntegerField's largest value on every backend


def _b64(hashes) -> list[str]:
    return [base64.b64encode(h).decode() for h in hashes]


class InclusionProofApi(LeanReadApi):
    """The RFC 9162 inclusion proof of one entry in the log's Merkle tree, with the signed
    checkpoint it verifies against: everything the offline verifier needs (``--inclusion``)."""

    # (Not in the docstring, which is the schema's description.) A plain successful GET takes
    # LeanReadApi's path (no DRF request wrapping or negotiation: the proof is the API's
    # hottest read, docs/performance.md); every refusal and every other request takes DRF's,
    # with the same access rule and the same response shape (OutputSerializer documents it).

    @extend_schema_serializer(component_name="InclusionProofQuery")
    class InputSerializer(serializers.Serializer):
        # Bounded as the seq column is, so no number reaches the database that it cannot hold.
        seq = serializers.IntegerField(min_value=1, max_value=MAX_SEQ, help_text="The entry.")
        tree_size = serializers.IntegerField(
            min_value=1,
            max_value=MAX_SEQ,
            required=False,
            help_text="The tree to prove it in; default: the latest signed checkpoint's, or the "
            "whole log when none is signed yet.",
        )

    @extend_schema_serializer(component_name="InclusionProof")
    class OutputSerializer(serializers.Serializer):
        protocol = serializers.CharField()
        seq = serializers.IntegerField()
        leaf_index = serializers.IntegerField(help_text="seq - 1")
        tree_size = serializers.IntegerField()
        entry = EntrySerializer()
        leaf_hash = serializers.CharField(help_text="SHA-256(0x00 || entry hash bytes), base64")
        inclusion_path = serializers.ListField(child=serializers.CharField())
        root_hash = serializers.CharField(help_text="The root the path leads to, base64.")
        checkpoint = serializers.CharField(
            allow_null=True, help_text="The C2SP signed checkpoint of tree_size, when signed."
        )

    # A program's token is read once per process; the access query re-checks it (get_protocol_for).
    authentication_classes = [SessionAuthentication, CachedTokenAuthentication]

    @extend_schema(parameters=[InputSerializer], responses=OutputSerializer)
    def get(self, request, code: str):
        protocol = get_protocol_for(
            user=request.user, pk=code, roles=LOG_READER_ROLES, token_key=_token_key(request.auth)
        )
        params = validated(self.InputSerializer, request.query_params)
        return Response(self._proof(protocol, params["seq"], params.get("tree_size")))

    def lean_get(self, request, user, **kwargs):
        seq, tree_size = request.GET.get("seq"), request.GET.get("tree_size")
        if not _plain_number(seq) or not (tree_size is None or _plain_number(tree_size)):
            return None  # absent, or not plain digits in range: the serializer answers
        protocol = get_protocol_for(
            user=user,
            pk=kwargs["code"],
            roles=LOG_READER_ROLES,
            token_key=_token_key(getattr(request, "lean_auth", None)),
        )
        return self._proof(protocol, int(seq), None if tree_size is None else int(tree_size))

    @staticmethod
    def _proof(protocol, seq: int, tree_size: int | None) -> dict:
        entry, size, checkpoint = entry_in_signed_tree(
            protocol=protocol, seq=seq, tree_size=tree_size
        )
        seq = entry.seq
        path = inclusion_proof(protocol_id=protocol.pk, seq=seq, tree_size=size)
        leaf = chain.leaf_hash(entry.hash)
        root = chain.root_from_inclusion(leaf, seq - 1, size, path) or chain.EMPTY_ROOT
        # Already the output's types (OutputSerializer documents them): re-rendering every field
        # would cost more than the proof on this hot path.
        return {
            "protocol": protocol.code,
            "seq": seq,
            "leaf_index": seq - 1,
            "tree_size": size,
            "entry": entry_dict(entry),
            "leaf_hash": base64.b64encode(leaf).decode(),
            "inclusion_path": _b64(path),
            "root_hash": base64.b64encode(root).decode(),
            "checkpoint": checkpoint.document.get("note") if checkpoint else None,
        }


def _token_key(auth) -> str | None:
    """The key of the API token a request was authenticated by, or None (a session)."""
    return auth.key if isinstance(auth, Token) else None


def _plain_number(value: str | None) -> bool:
    """Whether a query value is plain digits in 1..MAX_SEQ, which ``InputSerializer`` takes as
    that number (it also takes " 7 " and "7.0", which the lean path leaves to it)."""
    return (
        value is not None
        and 0 < len(value) <= 10
        and value.isascii()
        and value.isdigit()
        and 1 <= int(value) <= MAX_SEQ
    )


class ConsistencyProofApi(APIView):
    """The RFC 9162 consistency proof between two sizes of the log's Merkle tree: that the tree
    of ``first`` entries is a prefix of the tree of ``second`` (what a witness checks)."""

    @extend_schema_serializer(component_name="ConsistencyProofQuery")
    class InputSerializer(serializers.Serializer):
        first = serializers.IntegerField(min_value=0)
        second = serializers.IntegerField(min_value=0)

        def validate(self, data):
            if data["first"] > data["second"]:
                raise serializers.ValidationError({"first": "first must not exceed second."})
            return data

    @extend_schema_serializer(component_name="ConsistencyProof")
    class OutputSerializer(serializers.Serializer):
        protocol = serializers.CharField()
        first = serializers.IntegerField()
        second = serializers.IntegerField()
        consistency_path = serializers.ListField(child=serializers.CharField())

    @extend_schema(parameters=[InputSerializer], responses=OutputSerializer)
    def get(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
        params = validated(self.InputSerializer, request.query_params)
        first, second = params["first"], params["second"]
        held = log_size(protocol_id=protocol.pk)
        if second > held:
            raise DjangoValidationError({"second": f"The log holds {held} entries, not {second}."})
        path = consistency_proof(protocol_id=protocol.pk, first=first, second=second)
        data = {
            "protocol": protocol.code,
            "first": first,
            "second": second,
            "consistency_path": _b64(path),
        }
        return Response(self.OutputSerializer(data).data)


class DeviationCreateApi(APIView):
    """Record a deviation by hand (PI or editor). Whether outcomes had been seen is the seal's."""

    @extend_schema_serializer(component_name="DeviationInput")
    class InputSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(
            choices=[(k.value, k.label) for k in MANUAL_KINDS], default=EntryKind.DEVIATION
        )
        occurred_on = serializers.DateField(help_text="The day the deviation happened (UTC).")
        rationale = serializers.CharField(
            allow_blank=True, trim_whitespace=False, help_text="Required: what and why."
        )
        version = serializers.IntegerField(
            required=False, allow_null=True, help_text="The id of the version concerned."
        )

    @extend_schema(request=InputSerializer, responses={201: EntrySerializer})
    def post(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=DEVIATION_WRITER_ROLES)
        data = validated(self.InputSerializer, request.data)
        refs = []
        if data.get("version") is not None:
            version = (
                ProtocolVersion.objects.select_related("protocol")
                .filter(pk=data["version"], protocol=protocol)
                .first()
            )
            if version is None:
                raise DjangoValidationError(
                    {"version": f"Version {data['version']} is not a version of {protocol.code}."}
                )
            refs.append(version_ref(version))
        entry = deviation_record(
            protocol=protocol,
            user=request.user,
            kind=data["kind"],
            rationale=data["rationale"],
            occurred_on=data["occurred_on"],
            refs=refs,
        )
        return Response(entry_dict(entry), status=status.HTTP_201_CREATED)


class CheckpointListCreateApi(APIView):
    """The protocol's signed checkpoints that verify (GET, newest first; stored ones that do
    not verify against the configured keys are left out); POST signs the log now."""

    @extend_schema_serializer(component_name="LogCheckpoint")
    class OutputSerializer(serializers.Serializer):
        type = serializers.CharField(help_text="c2sp/tlog-checkpoint")
        protocol = serializers.CharField()
        origin = serializers.CharField()
        size = serializers.IntegerField(help_text="Entries in the signed tree.")
        root_hash = serializers.CharField(help_text="RFC 6962 Merkle root, base64.")
        signed_at = serializers.CharField()
        previous_size = serializers.IntegerField()
        note = serializers.CharField(
            help_text="The C2SP checkpoint, a signed note: what the signature covers."
        )

        def to_representation(self, instance):
            return instance  # the signed document exactly: re-rendering could break the signature

    @extend_schema(responses=OutputSerializer(many=True))
    def get(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
        valid, _invalid = checkpoints_checked(protocol)
        newest = sorted(valid, key=lambda c: (c.seq, c.pk), reverse=True)[:100]
        return Response([c.document for c in newest])

    @extend_schema(
        request=None,
        responses={201: OutputSerializer, 200: OutputSerializer},
        description="Sign the log's head now (201); 200 with the latest when the head is "
        "already checkpointed; 400 when the chain does not verify or no key is configured.",
    )
    def post(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
        if signing_key() is None:
            raise DjangoValidationError({"log": "No checkpoint signing key is configured."})
        checkpoint = checkpoint_write(protocol=protocol)
        if checkpoint is None:
            latest = latest_checkpoint(protocol=protocol)
            if latest is None:
                raise DjangoValidationError({"log": "The log has no entries to checkpoint."})
            return Response(latest.document, status=status.HTTP_200_OK)
        return Response(checkpoint.document, status=status.HTTP_201_CREATED)


@extend_schema_serializer(component_name="OutcomeSeal")
class SealOutputSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    # A declared field, not Field.label: DRF's metaclass moves it off the class.
    label = serializers.CharField()  # type: ignore[assignment]
    state = serializers.CharField()
    sealed = serializers.BooleanField()
    unsealed_by = serializers.CharField(allow_null=True)
    unsealed_at = serializers.CharField(allow_null=True)


def _seal_data(version) -> dict:
    unsealing = unsealing_for(version)
    return {
        "version": version.pk,
        "label": version.label,
        "state": version.state,
        "sealed": unsealing is None,
        "unsealed_by": unsealing.unsealed_by.get_username() if unsealing else None,
        "unsealed_at": format_timestamp(unsealing.unsealed_at) if unsealing else None,
    }


class SealApi(APIView):
    """Whether a version's outcomes are still sealed."""

    @extend_schema(responses=SealOutputSerializer)
    def get(self, request, pk: int):
        version = get_version_for(user=request.user, pk=pk, roles=LOG_READER_ROLES)
        return Response(SealOutputSerializer(_seal_data(version)).data)


class UnsealApi(APIView):
    """Unseal a frozen version's outcomes (PI only), confirming with the protocol code."""

    @extend_schema_serializer(component_name="UnsealInput")
    class InputSerializer(serializers.Serializer):
        confirmation = serializers.CharField(
            trim_whitespace=False, help_text="The protocol's code, typed exactly."
        )

    @extend_schema(request=InputSerializer, responses={201: SealOutputSerializer})
    def post(self, request, pk: int):
        version = get_version_for(user=request.user, pk=pk, roles={Role.PI})
        data = validated(self.InputSerializer, request.data)
        outcome_unseal(
            version=version,
            user=request.user,
            confirmation=data["confirmation"],
        )
        return Response(SealOutputSerializer(_seal_data(version)).data, status=201)
