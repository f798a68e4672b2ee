"""The draft page's form for a design diagnosis: the kind's world (one number field per schema
property, with its help text, range and default), simulations, seed, and an optional curve."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.analysis.diagnosis.engine import MAX_SIMS, MAX_SIZES
from apps.analysis.diagnosis.world import SizeParameter

WORLD_PREFIX = "world__"


class DiagnosisForm(forms.Form):
    sims = forms.IntegerField(
        label="Simulations",
        min_value=1,
        max_value=MAX_SIMS,
        initial=200,
        help_text="Each draws data of the design from the world and runs the plan's pipeline "
        "on them; Monte Carlo SEs shrink as 1/√(simulations).",
    )
    seed = forms.IntegerField(
        label="Seed",
        min_value=0,
        max_value=2**63 - 1,
        initial=1,
        help_text="The same draft, world and seed give the same diagnosis, byte for byte.",
    )
    size = forms.ChoiceField(
        label="Sample-size curve",
        required=False,
        help_text="Run the diagnosis at several sizes of the design.",
    )
    size_values = forms.CharField(
        label="Sizes",
        required=False,
        help_text=f"Up to {MAX_SIZES} whole numbers, separated by commas (e.g. 8, 12, 16).",
    )

    def __init__(
        self,
        *args: Any,
        schema: dict[str, Any],
        sizes: tuple[SizeParameter, ...],
        current: dict[str, int],
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.world_names = list(schema["properties"])
        for name, spec in schema["properties"].items():
            self.fields[WORLD_PREFIX + name] = forms.FloatField(
                label=spec.get("title", name),
                min_value=spec.get("minimum"),
                max_value=spec.get("maximum"),
                initial=spec.get("default"),
                required=False,  # blank: the world's default
                help_text=f"{spec.get('description', '')} Range {spec.get('minimum')}–"
                f"{spec.get('maximum')}; blank: {spec.get('default')}.",
            )
        size_field = self.fields["size"]
        assert isinstance(size_field, forms.ChoiceField)
        size_field.choices = [("", "none")] + [
            (s.name, f"{s.title} (now {current.get(s.name, '?')})") for s in sizes
        ]

    def world_fields(self) -> list[forms.BoundField]:
        return [self[WORLD_PREFIX + name] for name in self.world_names]

    def clean_size_values(self) -> list[int]:
        text = self.cleaned_data.get("size_values") or ""
        try:
            values = [int(v) for v in text.replace(" ", "").split(",") if v]
        except ValueError:
            raise forms.ValidationError("Give whole numbers separated by commas.") from None
        if len(values) > MAX_SIZES or any(v < 1 for v in values):
            raise forms.ValidationError(f"Give 1 to {MAX_SIZES} sizes, each at least 1.")
        return values

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("size") and not data.get("size_values"):
            self.add_error("size_values", "Name the sizes the curve runs at.")
        return data

    def world(self) -> dict[str, Any]:
        return {
            name: self.cleaned_data[WORLD_PREFIX + name]
            for name in self.world_names
            if self.cleaned_data.get(WORLD_PREFIX + name) is not None
        }
