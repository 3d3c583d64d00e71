"""Join the results files of sharded `anvil eval` runs into one results file.

A CI matrix runs `anvil eval --shard i/n` on several machines; each writes its own results
file. Merging them must give the file one unsharded run would have given (sorted), so the
reports built on it do not depend on how the work was split. Inputs are read, never written:
they are often CI artifacts, possibly read-only, and a merge must not change its evidence.
The merged file starts with the shards' metadata joined (`meta.merged`): one model, one
definition per metric, the same cases and shard count; files with and without metadata (of
two anvil versions) are not mixed.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from anvil_local.errors import DataError
from anvil_local.run.meta import RunMeta, merged
from anvil_local.run.results import Entry as _Entry
from anvil_local.run.results import ResultsFile, read_results

log = logging.getLogger(__name__)

Pair = tuple[str, str]  # (case id, metric)


@dataclass
class MergeReport:
    """What a merge wrote and what it found wrong with its inputs."""

    lines: int  # lines written
    duplicates: int  # lines dropped because their (case id, metric) pair was already kept
    missing: list[Pair] = field(default_factory=list)  # pairs expected but in no input
    errors: int = 0  # lines written whose result is an error
    model: str = ""  # the judge model of every line ("" when no input has a line)
    model_sha256: str = ""


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _model_name(entry: _Entry) -> str:
    name = entry.item.get("model") or "?"
    sha = entry.item.get("model_sha256") or ""
    return f"{name} (sha256 {sha[:12] or '?'})"


def _check_model(first: _Entry | None, entry: _Entry) -> _Entry:
    """Refuse lines of two judge models: their scores are not comparable in one file."""
    if first is None:
        return entry
    if entry.item.get("model_sha256", "") != first.item.get("model_sha256", ""):
        raise DataError(
            f"{first.path} and {entry.path} were judged by different models: "
            f"{_model_name(first)} on line {first.number}, {_model_name(entry)} on line "
            f"{entry.number}; merge only the shards of one run"
        )
    return first


def _check_position(
    by_case: dict[str, _Entry], by_position: dict[int, _Entry], entry: _Entry
) -> None:
    """Refuse shards of different case files: a case must keep one position, and vice versa."""
    case_id, position = str(entry.item["case_id"]), entry.item["position"]
    seen = by_case.setdefault(case_id, entry)
    if seen.item["position"] != position:
        raise DataError(
            f"case {case_id!r} is at position {seen.item['position']} in {seen.where} but at "
            f"{position} in {entry.where}; were the shards run on the same cases file?"
        )
    seen = by_position.setdefault(position, entry)
    if str(seen.item["case_id"]) != case_id:
        raise DataError(
            f"position {position} is case {str(seen.item['case_id'])!r} in {seen.where} but "
            f"{case_id!r} in {entry.where}; were the shards run on the same cases file?"
        )


def _joined_meta(files: Sequence[ResultsFile]) -> RunMeta | None:
    """The merged file's metadata; None when no input has any (files of an older anvil)."""
    with_meta = [f for f in files if f.meta is not None]
    without = [f for f in files if f.meta is None and f.entries]
    if with_meta and without:
        raise DataError(
            f"{without[0].path} has no metadata line (written by an older anvil) but "
            f"{with_meta[0].path} has one; merge only the shards of one run"
        )
    if not with_meta:
        return None
    return merged([(str(f.path), f.meta) for f in with_meta if f.meta is not None])


def _write_atomic(out: Path, entries: Sequence[_Entry], meta: RunMeta | None = None) -> None:
    """Write beside `out` and rename, so a reader never sees a half-merged file."""
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as handle:
            if meta is not None:
                handle.write((json.dumps(meta.to_line(), ensure_ascii=False) + "\n").encode())
            for entry in entries:
                try:
                    text = json.dumps(entry.item, ensure_ascii=False) + "\n"
                    handle.write(text.encode("utf-8"))
                except (UnicodeEncodeError, ValueError) as exc:
                    raise DataError(f"{entry.where}: cannot be written: {exc}") from exc
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, out)
    except OSError as exc:
        raise DataError(f"{out}: cannot write: {exc.strerror or exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def merge_results(
    inputs: Sequence[str | Path],
    out: str | Path,
    expected: Sequence[Pair] | None = None,
) -> MergeReport:
    """Join shard results files into `out`: one line per (case id, metric), sorted.

    A pair found more than once keeps a non-error line over an error line (a shard re-run
    may have fixed it), else the first line in input order. Lines are sorted by case
    position, then by metric in the order metrics first appear, which is how one unsharded
    run lists them. `missing` lists the `expected` pairs absent from every input, or, when
    `expected` is None, every (case seen x metric seen) combination that is absent.
    """
    if not inputs:
        raise DataError("no results files to merge")
    paths = [Path(p) for p in inputs]
    out = Path(out)
    for path in paths:
        if _same_file(path, out):
            raise DataError(f"{out}: is one of the files to merge; write the merge elsewhere")

    kept: dict[Pair, _Entry] = {}
    metric_order: dict[str, int] = {}
    by_case: dict[str, _Entry] = {}
    by_position: dict[int, _Entry] = {}
    first: _Entry | None = None
    duplicates = 0
    files = [read_results(path) for path in paths]
    meta = _joined_meta(files)
    for results in files:
        entries = results.entries
        log.debug("%s: %d result lines", results.path, len(entries))
        for entry in entries:
            first = _check_model(first, entry)
            _check_position(by_case, by_position, entry)
            metric_order.setdefault(entry.item["metric"], len(metric_order))
            held = kept.get(entry.pair)
            if held is None:
                kept[entry.pair] = entry
                continue
            duplicates += 1
            if held.is_error and not entry.is_error:
                kept[entry.pair] = entry
                log.info("%s: replaces the error line %s", entry.where, held.where)
            else:
                log.debug("%s: duplicate of %s, dropped", entry.where, held.where)

    ordered = sorted(
        kept.values(),
        key=lambda e: (e.item["position"], metric_order[e.item["metric"]]),
    )
    _write_atomic(out, ordered, meta)

    if expected is None:
        cases = sorted(by_case, key=lambda case_id: by_case[case_id].item["position"])
        wanted = [(case_id, metric) for case_id in cases for metric in metric_order]
    else:
        wanted = list(dict.fromkeys((str(case_id), metric) for case_id, metric in expected))
        extra = len(kept.keys() - set(wanted))
        if extra:
            log.warning("%d merged pairs were not expected (kept anyway)", extra)
    missing = [pair for pair in wanted if pair not in kept]

    report = MergeReport(
        lines=len(ordered),
        duplicates=duplicates,
        missing=missing,
        errors=sum(1 for entry in ordered if entry.is_error),
        model=first.item.get("model", "") if first else "",
        model_sha256=first.item.get("model_sha256", "") if first else "",
    )
    if duplicates:
        log.info("%d duplicate lines dropped", duplicates)
    if missing:
        log.warning("%d expected (case, metric) pairs are in no results file", len(missing))
    log.info("merged %d files into %s: %d lines", len(paths), out, report.lines)
    return report
