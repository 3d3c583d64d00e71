"""Heads: small models fitted to labels that read what the judge already computed.

A head is fitted per judge model (`anvil fit`) and stored in the metric file beside the
fitted calibration maps, as plain numbers (no pickle): the names of the features it reads,
their standardisation, the weights and the intercept.

- `logistic` (a binary label): P(pass) = 1 / (1 + exp(-(w . z + b))), z the standardised
  features; fitted with both classes weighted equally, so 0.5 is the cut that balances the
  two kinds of error.
- `linear` (a graded label): w . z + b, the label rescaled to 0..1 (lowest 0, highest 1),
  clipped to 0..1.

What a head reads from a result (`features_of`): a features metric's readings; a G-Eval
metric's whole score distribution (P(score = k) for every k) and its weighted score; a
likelihood metric's value and, with a contrast, both of its sides; a hidden-state metric's
P(Yes) and its state's dimensions (`state.h0`, ...); any other metric's score.
Like a calibration map, a head is applied after the cache (the cache keeps the raw result),
so fitting one never re-judges a case.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.metrics.result import MetricResult

HEAD_KINDS = ("logistic", "linear")


#: A hidden-state dimension's feature name: `<metric name>.h<index>`.
DIMENSION = "{name}.h{index}"


def state_readings(name: str, trace: dict[str, Any]) -> dict[str, float]:
    """A hidden-state member's dimensions as named features (empty for any other trace)."""
    if trace.get("type") != "hidden_state":
        return {}
    return {DIMENSION.format(name=name, index=i): float(v) for i, v in enumerate(trace["state"])}


def is_dimension(feature: str) -> bool:
    """Whether a feature name is a hidden-state dimension (`<name>.h<index>`)."""
    _, dot, tail = feature.rpartition(".h")
    return bool(dot) and tail.isdigit()


def features_of(result: MetricResult) -> dict[str, float]:
    """The features a head reads from a result (see the module docstring), by name."""
    trace = result.trace.to_dict()
    kind = trace.get("type")
    if kind == "features":
        return {str(k): float(v) for k, v in (trace.get("values") or {}).items()}
    if kind == "geval" and trace.get("distribution"):
        found = {f"p{k}": float(v) for k, v in trace["distribution"].items()}
        found["weighted"] = float(trace["weighted"])
        return found
    if kind == "geval" and trace.get("probabilities"):
        return {f"p_{k}": float(v) for k, v in trace["probabilities"].items()}
    if kind == "hidden_state":
        return {"p_yes": float(trace["p_yes"]), **state_readings("state", trace)}
    if kind == "likelihood":
        found = {"value": float(trace["value"]), "conditional": float(trace["conditional"])}
        if trace.get("unconditional") is not None:
            found["unconditional"] = float(trace["unconditional"])
        return found
    expected = trace.get("expected_score")
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return {"expected_score": float(expected)}
    score = result.raw_score if result.raw_score is not None else result.score
    return {} if score is None else {"score": float(score)}


def holds_on_of(data: dict[str, Any], model: str) -> tuple[tuple[str, str], ...]:
    """A fitted table's `holds_on`: the formats of conversions of its file it was shown to
    hold on, each with its evidence (`{ Q8_0 = "..." }`), in the order written."""
    found = data.get("holds_on", {})
    if not isinstance(found, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in found.items()
    ):
        raise MetricDefinitionError(
            f"calibration for {model!r}: 'holds_on' maps a format to its evidence, "
            'e.g. { Q8_0 = "benchmarks/results/head_files.json: ..." }'
        )
    return tuple((k.upper(), v) for k, v in found.items())


def _numbers(data: dict[str, Any], key: str, size: int | None, model: str) -> tuple[float, ...]:
    value = data.get(key)
    if not isinstance(value, list) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value
    ):
        raise MetricDefinitionError(f"head for {model!r}: '{key}' must be a list of numbers")
    if size is not None and len(value) != size:
        raise MetricDefinitionError(
            f"head for {model!r}: '{key}' has {len(value)} numbers for {size} features"
        )
    return tuple(float(v) for v in value)


@dataclass(frozen=True)
class Head:
    """A fitted head for one model file (`sha256`); see the module docstring."""

    kind: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    sha256: str
    label: str = ""
    fitted_on: str = ""
    holds_on: tuple[tuple[str, str], ...] = ()  # (format, evidence) of conversions

    def __post_init__(self) -> None:
        if self.kind not in HEAD_KINDS:
            raise MetricDefinitionError(f"a head's kind is one of {', '.join(HEAD_KINDS)}")
        sizes = {len(self.features), len(self.mean), len(self.scale), len(self.coef)}
        if len(sizes) != 1 or not self.features:
            raise MetricDefinitionError(
                "a head needs as many means, scales and weights as features"
            )
        if any(s <= 0 for s in self.scale):
            raise MetricDefinitionError("a head's scales must be positive")
        if not isinstance(self.sha256, str) or len(self.sha256) != 64:
            raise MetricDefinitionError("a head needs the model's 'sha256'")

    def linear_part(self, values: Sequence[float]) -> float:
        return self.intercept + sum(
            w * (x - m) / s
            for w, x, m, s in zip(self.coef, values, self.mean, self.scale, strict=True)
        )

    def score(self, values: Sequence[float]) -> float:
        """The head's score (0..1) for feature values in `features` order."""
        z = self.linear_part(values)
        if self.kind == "logistic":
            return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0
        return min(1.0, max(0.0, z))

    def apply(self, result: MetricResult) -> float | None:
        """The head's score for a result, or None when the result lacks a feature."""
        found = features_of(result)
        if any(name not in found for name in self.features):
            return None
        return self.score([found[name] for name in self.features])

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "sha256": self.sha256}
        if self.label:
            data["label"] = self.label
        if self.fitted_on:
            data["fitted_on"] = self.fitted_on
        data.update(
            features=list(self.features),
            mean=list(self.mean),
            scale=list(self.scale),
            coef=list(self.coef),
            intercept=self.intercept,
        )
        if self.holds_on:
            data["holds_on"] = dict(self.holds_on)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], model: str) -> Head:
        known = {"kind", "sha256", "label", "fitted_on", "holds_on", "features", "mean"}
        known |= {"scale", "coef"}
        unknown = sorted(set(data) - known - {"intercept"})
        if unknown:
            raise MetricDefinitionError(
                f"unknown head field(s) for {model!r}: {', '.join(unknown)}"
            )
        features = data.get("features")
        if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
            raise MetricDefinitionError(f"head for {model!r}: 'features' must list names")
        size = len(features)
        intercept = data.get("intercept")
        if not isinstance(intercept, int | float) or isinstance(intercept, bool):
            raise MetricDefinitionError(f"head for {model!r}: 'intercept' must be a number")
        return cls(
            kind=str(data.get("kind")),
            features=tuple(features),
            mean=_numbers(data, "mean", size, model),
            scale=_numbers(data, "scale", size, model),
            coef=_numbers(data, "coef", size, model),
            intercept=float(intercept),
            sha256=data.get("sha256", ""),
            label=str(data.get("label", "")),
            fitted_on=str(data.get("fitted_on", "")),
            holds_on=holds_on_of(data, model),
        )
