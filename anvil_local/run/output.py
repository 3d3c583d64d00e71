"""The results file: one complete JSON line per (case, metric), flushed as it is written.

An interrupted run loses at most the pairs in flight. On resume, the lines already there are
read back (a torn last line is cut off) and their pairs are not run again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from anvil_local.errors import DataError


class ResultWriter:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._handle: TextIO | None = None

    def existing(self) -> list[dict[str, Any]]:
        """Lines already written; a torn final line (killed mid-write) is truncated away."""
        if not self.path.exists():
            return []
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            raise DataError(f"{self.path}: cannot read: {exc.strerror}") from exc
        complete, newline, torn = raw.rpartition(b"\n")
        lines = [
            self._parse(chunk, number)
            for number, chunk in enumerate(complete.split(b"\n"), 1)
            if chunk.strip()
        ]
        if torn.strip():
            try:
                lines.append(self._parse(torn, complete.count(b"\n") + 2))
                with self.path.open("ab") as handle:  # whole line, newline missing
                    handle.write(b"\n")
            except DataError:
                with self.path.open("r+b") as handle:  # torn line: drop it
                    handle.truncate(len(complete) + len(newline))
        return lines

    def _parse(self, chunk: bytes, number: int) -> dict[str, Any]:
        try:
            item = json.loads(chunk)
        except ValueError:
            item = None
        if not isinstance(item, dict) or "metric" not in item or "case_id" not in item:
            raise DataError(
                f"{self.path}:{number}: not a result line of anvil eval; use another --out"
            )
        return item

    def write(self, line: dict[str, Any]) -> None:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = self.path.open("a", encoding="utf-8")
        self._handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
