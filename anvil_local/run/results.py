"""Reading a results file without writing it: its metadata line (if any) and its result lines.

`anvil merge`, `anvil compare` and `anvil view` read files that are often CI artifacts, maybe
read-only, that they must not change. The tolerance is `ResultWriter.existing()`'s: a final
line without its newline is kept when it is whole and ignored when torn (the run was cut
off); any other line that is neither the metadata line (first) nor a result line is an error
naming `file:line`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil_local.errors import DataError
from anvil_local.run.meta import RunMeta, is_meta
from anvil_local.run.records import ResultLine

log = logging.getLogger(__name__)


@dataclass
class Entry:
    """One result line as written, and where it was read (for error messages)."""

    item: dict[str, Any]
    path: Path
    number: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.number}"

    @property
    def pair(self) -> tuple[str, str]:
        return (str(self.item["case_id"]), self.item["metric"])

    @property
    def is_error(self) -> bool:
        return self.item.get("error") is not None


@dataclass
class ResultsFile:
    """A results file as read: its metadata (None for a file written before it existed)."""

    path: Path
    meta: RunMeta | None
    entries: list[Entry] = field(default_factory=list)

    def lines(self) -> list[ResultLine]:
        return [ResultLine.from_dict(entry.item) for entry in self.entries]

    @property
    def model(self) -> tuple[str, str]:
        """(name, sha256) of the judge: from the metadata, else from the first line."""
        if self.meta is not None:
            return self.meta.model, self.meta.model_sha256
        if self.entries:
            item = self.entries[0].item
            return str(item.get("model") or ""), str(item.get("model_sha256") or "")
        return "", ""


def read_results(path: str | Path) -> ResultsFile:
    """The metadata and result lines of one file; a DataError for anything else."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    complete, _, tail = raw.rpartition(b"\n")
    items = [
        (number, _parse(path, chunk, number))
        for number, chunk in enumerate(complete.split(b"\n"), 1)
        if chunk.strip()
    ]
    if tail.strip():
        number = raw.count(b"\n") + 1
        try:
            items.append((number, _parse(path, tail, number)))
        except DataError:
            log.warning("%s:%d: ignoring a torn last line (the run was cut off)", path, number)
    meta = None
    if items and is_meta(items[0][1]):
        number, item = items.pop(0)
        meta = RunMeta.from_line(item, f"{path}:{number}")
    return ResultsFile(path, meta, [Entry(item, path, number) for number, item in items])


def result_items(path: str | Path) -> list[dict[str, Any]]:
    """The result lines of a file as plain dicts (its metadata line left out)."""
    return [entry.item for entry in read_results(path).entries]


def _parse(path: Path, chunk: bytes, number: int) -> dict[str, Any]:
    """One line as the metadata line (the first only) or a result line, else a DataError."""
    try:
        item = json.loads(chunk)
    except ValueError:  # bad JSON or bad UTF-8
        item = None
    if is_meta(item):
        if number != 1:
            raise DataError(f"{path}:{number}: a metadata line where a result line belongs")
        return item
    if (
        not isinstance(item, dict)
        or "case_id" not in item
        or not isinstance(item.get("metric"), str)
        or not isinstance(item.get("position"), int)
        or isinstance(item.get("position"), bool)
    ):
        raise DataError(f"{path}:{number}: not a result line of anvil eval")
    return item
