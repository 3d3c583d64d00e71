"""What a bench measures: labelled cases, and which metric is compared with which label.

A suite file (TOML) names its data, an optional case selection and its metrics, each with the
label it is compared with; paths are relative to the suite file:

    name = "summeval"
    data = "../data/summeval.jsonl"
    docs = 10
    [[metrics]]
    file = "../../examples/geval/coherence.toml"
    label = "coherence"

A G-Eval panel file compares every member with the label, or one member with `member = NAME`.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from anvil_local.errors import DataError
from anvil_local.run.dataset import CaseRow

SUITES_ENV = "ANVIL_SUITES"


@dataclass(frozen=True)
class MetricSpec:
    file: Path
    label: str
    member: str | None = None  # one member of a G-Eval panel file (default: all of them)

    def metrics(self) -> list[Any]:
        """The metrics this spec compares with its label: the file's one metric, a panel's
        members, or the one member it names."""
        from anvil_local.spec import load_metrics

        metrics = load_metrics(self.file)
        if self.member is None:
            return metrics
        chosen = [m for m in metrics if m.name == self.member]
        if not chosen:
            names = ", ".join(m.name for m in metrics)
            raise DataError(f"{self.file} has no member named {self.member!r} (members: {names})")
        return chosen


@dataclass(frozen=True)
class Suite:
    name: str
    data: Path
    metrics: tuple[MetricSpec, ...]
    docs: int | None = None
    limit: int | None = None
    description: str = ""


def suite_dirs() -> list[Path]:
    """Where `--suite NAME` looks: $ANVIL_SUITES, ./benchmarks/suites, and the suites of the
    checkout this package was installed from."""
    dirs = []
    if os.environ.get(SUITES_ENV):
        dirs.append(Path(os.environ[SUITES_ENV]))
    dirs.append(Path.cwd() / "benchmarks" / "suites")
    dirs.append(Path(__file__).resolve().parents[2] / "benchmarks" / "suites")
    return dirs


def find_suite(name: str) -> Path:
    candidate = Path(name)
    if candidate.suffix == ".toml" or os.sep in name:
        if not candidate.is_file():
            raise DataError(f"no suite file at {candidate}")
        return candidate
    for folder in suite_dirs():
        path = folder / f"{name}.toml"
        if path.is_file():
            return path
    known = sorted({p.stem for d in suite_dirs() if d.is_dir() for p in d.glob("*.toml")})
    hint = f"; known suites: {', '.join(known)}" if known else ""
    raise DataError(f"no suite named {name!r}{hint}")


def load_suite(name: str) -> Suite:
    path = find_suite(name)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid TOML: {exc}") from exc
    base = path.parent
    try:
        metrics = tuple(
            MetricSpec(
                file=(base / m["file"]).resolve(),
                label=str(m["label"]),
                member=str(m["member"]) if "member" in m else None,
            )
            for m in raw["metrics"]
        )
        return Suite(
            name=str(raw.get("name", path.stem)),
            data=(base / raw["data"]).resolve(),
            metrics=metrics,
            docs=raw.get("docs"),
            limit=raw.get("limit"),
            description=str(raw.get("description", "")),
        )
    except (KeyError, TypeError) as exc:
        raise DataError(f"{path}: a suite needs data and [[metrics]] with file and label") from exc


def label_name(label: str) -> str:
    """`labels.coherence` and `coherence` both name the label `coherence`."""
    return label.removeprefix("labels.")


def select(rows: list[CaseRow], docs: int | None, limit: int | None) -> list[CaseRow]:
    """The first `docs` documents (all their cases, file order) or the first `limit` cases."""
    if docs is not None and limit is not None:
        raise DataError("give --docs or --limit, not both")
    if limit is not None:
        return rows[:limit]
    if docs is None:
        return rows
    chosen: list[str] = []
    for row in rows:
        doc = document_of(row)
        if doc not in chosen:
            if len(chosen) == docs:
                continue
            chosen.append(doc)
    keep = set(chosen)
    return [r for r in rows if document_of(r) in keep]


def document_of(row: CaseRow) -> str:
    """The case's source document (`doc`); a case without one is its own document."""
    meta = row.case.metadata or {}
    return str(meta.get("doc", row.case_id))


def labels_of(rows: list[CaseRow], label: str, source: str) -> np.ndarray:
    name = label_name(label)
    values = []
    for row in rows:
        labels = (row.case.metadata or {}).get("labels") or {}
        value = labels.get(name)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise DataError(f"{source}: case {row.case_id!r} has no numeric label {name!r}")
        values.append(float(value))
    return np.asarray(values)
