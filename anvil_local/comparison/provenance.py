"""What differed between the two runs, read from their metadata, and which differences
refuse a comparison.

A change of judge model or of a metric's definition changes the scores by itself: a drop
would then say nothing about the outputs under test. Such a comparison runs only when asked
for (`--allow-model-change`, `--allow-metric-change`; `--pair` asks for it for the metrics
it pairs), and the report says what differed. Other differences (the cases, the anvil or
llama.cpp version) are reported, never refused: a pull request that changes the outputs
changes the case data by design.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import DataError
from anvil_local.run.meta import RunMeta
from anvil_local.run.results import ResultsFile

MODEL_FLAG = "--allow-model-change"
METRIC_FLAG = "--allow-metric-change"


@dataclass(frozen=True)
class Difference:
    """One thing that differed; `flag` is the option that allows it when it refuses."""

    what: str
    text: str
    flag: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "text": self.text, "refused_without": self.flag}


def _model(results: ResultsFile) -> str:
    name, sha = results.model
    return f"{name or '?'} (sha256 {sha[:12] or '?'})"


def _versions(meta: RunMeta | None, key: str) -> str:
    if meta is None:
        return "?"
    found = dict.fromkeys(str(getattr(run, key) or "?") for run in meta.runs)
    return ", ".join(found) or "?"


def differences(
    base: ResultsFile, new: ResultsFile, metrics: Sequence[tuple[str, str]]
) -> list[Difference]:
    """What differed between BASE and NEW for these (BASE name, NEW name) metric pairs."""
    found: list[Difference] = []
    for side, results in (("BASE", base), ("NEW", new)):
        if results.meta is None:
            found.append(
                Difference(
                    "metadata",
                    f"{side} ({results.path}) has no metadata line (written by an older anvil "
                    "or streamed to stdout): its metric definitions cannot be checked",
                )
            )
    if base.model[1] != new.model[1]:
        found.append(Difference("model", f"judge model {_model(base)} → {_model(new)}", MODEL_FLAG))
    if base.meta is not None and new.meta is not None:
        for name, new_name in metrics:
            old_info = base.meta.metrics.get(name)
            new_info = new.meta.metrics.get(new_name)
            if old_info is None or new_info is None or old_info.sha256 == new_info.sha256:
                continue
            change = f"{old_info.sha256[:12]} → {new_info.sha256[:12]}"
            if name != new_name:
                found.append(
                    Difference(
                        "metric",
                        f"metric `{name}` → `{new_name}` (paired by --pair): definition {change}",
                    )
                )
            else:
                found.append(
                    Difference("metric", f"metric `{name}`: definition {change}", METRIC_FLAG)
                )
        found += _run_differences(base.meta, new.meta)
    return found


def _run_differences(base: RunMeta, new: RunMeta) -> list[Difference]:
    found = []
    old_run, new_run = base.last_run, new.last_run
    old_data = old_run.data if old_run else None
    new_data = new_run.data if new_run else None
    if old_data and new_data and old_data.sha256 != new_data.sha256:
        found.append(
            Difference(
                "data",
                f"case data: {old_data.cases} cases (sha256 {old_data.sha256[:12]}) → "
                f"{new_data.cases} cases (sha256 {new_data.sha256[:12]})",
            )
        )
    for key, label in (("anvil", "anvil-local"), ("llama_cpp", "llama-cpp-python")):
        before, after = _versions(base, key), _versions(new, key)
        if before != after:
            found.append(Difference(key, f"{label} {before} → {after}"))
    return found


def refuse(found: Sequence[Difference], allowed: set[str]) -> None:
    """One DataError naming every difference that needs a flag not given."""
    blocking = [d for d in found if d.flag is not None and d.flag not in allowed]
    if not blocking:
        return
    parts = "; ".join(f"{d.text} ({d.flag} compares them anyway)" for d in blocking)
    raise DataError(f"BASE and NEW are not comparable as they are: {parts}")


def metadata_rows(base: ResultsFile, new: ResultsFile) -> list[tuple[str, str, str]]:
    """(field, BASE, NEW) for the report's metadata table."""

    def run_field(results: ResultsFile, key: str) -> str:
        run = results.meta.last_run if results.meta is not None else None
        if run is None:
            return "-"
        if key == "data":
            data = run.data
            return f"{data.cases} cases, {data.sha256[:12]}" if data else "-"
        value = getattr(run, key)
        return "-" if value in (None, "") else str(value)

    def metric_field(results: ResultsFile) -> str:
        if results.meta is None:
            return "-"
        return ", ".join(f"{n} ({i.sha256[:8]})" for n, i in results.meta.metrics.items())

    rows = [("file", str(base.path), str(new.path)), ("model", _model(base), _model(new))]
    rows.append(("metrics", metric_field(base), metric_field(new)))
    for key, label in (
        ("anvil", "anvil-local"),
        ("llama_cpp", "llama-cpp-python"),
        ("data", "case data"),
        ("started", "started"),
        ("threads", "threads"),
        ("batch_size", "batch size"),
        ("executor", "executor"),
        ("shard", "shard"),
    ):
        rows.append((label, run_field(base, key), run_field(new, key)))
    counts = [str(len(side.meta.runs)) if side.meta else "-" for side in (base, new)]
    rows.append(("runs in the file", counts[0], counts[1]))
    return rows
