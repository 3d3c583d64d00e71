"""Results of several files side by side: one row per (case, metric), one line per file.

`anvil compare` and `anvil view` both ask "what did each run say about this case?". A metric
keeps its name across files unless `--pair BASE=NEW` says that metric BASE of the first file
is NEW in the others (a metric renamed, or two designs of one metric compared).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from anvil_local.errors import DataError
from anvil_local.run.records import ResultLine
from anvil_local.run.results import ResultsFile


@dataclass(frozen=True)
class Paired:
    """One (case, metric) and its line in each file (None where a file lacks it)."""

    case_id: str
    metric: str  # the name in the first file
    lines: tuple[ResultLine | None, ...]

    @property
    def complete(self) -> bool:
        return all(line is not None for line in self.lines)

    @property
    def doc(self) -> str:
        """The document a comparison resamples by: the case's `doc`, else the case itself."""
        for line in self.lines:
            if line is not None and line.doc is not None:
                return line.doc
        return self.case_id


def parse_renames(items: Iterable[str]) -> dict[str, str]:
    """["Old=New", ...] -> {"Old": "New"} (split at the first "=")."""
    renames: dict[str, str] = {}
    for item in items:
        base, sep, new = item.partition("=")
        base, new = base.strip(), new.strip()
        if not sep or not base or not new:
            raise DataError(f"--pair expects BASE_METRIC=NEW_METRIC, got {item!r}")
        if base in renames:
            raise DataError(f"--pair {base!r} is given twice")
        renames[base] = new
    return renames


def pair_results(
    files: Sequence[ResultsFile], renames: Mapping[str, str] | None = None
) -> list[Paired]:
    """Every (case, metric) of any file, in the first file's order (case position, then the
    order metrics first appear), then what only later files hold. A metric of the first file
    is looked up under `renames[metric]` in the others."""
    renames = renames or {}
    back = {new: base for base, new in renames.items()}
    _check_renames(files, renames)
    keys: dict[tuple[str, str], int] = {}  # (case id, metric as the first file names it)
    order: list[tuple[int, int, int, tuple[str, str]]] = []
    metric_rank: dict[str, int] = {}
    tables: list[dict[tuple[str, str], ResultLine]] = []
    for index, results in enumerate(files):
        table: dict[tuple[str, str], ResultLine] = {}
        for line in results.lines():
            if index > 0 and line.metric in renames and line.metric not in back:
                continue  # BASE's metric of this name is paired with another: not this one
            name = line.metric if index == 0 else back.get(line.metric, line.metric)
            key = (line.case_id, name)
            table.setdefault(key, line)
            if key not in keys:
                keys[key] = len(keys)
                rank = metric_rank.setdefault(name, len(metric_rank))
                order.append((index, line.position, rank, key))
        tables.append(table)
    order.sort(key=lambda item: item[:3])
    return [Paired(key[0], key[1], tuple(table.get(key) for table in tables)) for *_, key in order]


def _check_renames(files: Sequence[ResultsFile], renames: Mapping[str, str]) -> None:
    """A --pair naming a metric no file holds is a typo, not an empty comparison."""
    if not renames:
        return
    first = {entry.item["metric"] for entry in files[0].entries}
    later = {entry.item["metric"] for f in files[1:] for entry in f.entries}
    for base, new in renames.items():
        if base not in first:
            raise DataError(f"--pair {base}={new}: {files[0].path} has no metric {base!r}")
        if files[1:] and new not in later:
            raise DataError(f"--pair {base}={new}: no other file has a metric {new!r}")
