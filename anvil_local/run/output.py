"""The results file: one complete JSON line per (case, metric), flushed as it is written.

An interrupted run loses at most the pairs in flight. On resume, the lines already there are
read back (a torn last line is cut off) and their pairs are not run again; pairs whose line
is an error are run again, and their old line is removed first, so the file never holds two
lines for one pair. One process writes a results file at a time (a lock beside it).

The first line is the run's metadata (`meta.py`): written when the file is created, and
rewritten with the resuming run added when a run resumes a file that has one. A file written
before metadata existed is resumed as it is, without one.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, TextIO

from anvil_local.errors import DataError, io_error
from anvil_local.run.meta import RunMeta, is_meta


def check_writable(path: str | Path, option: str, regular: bool = False) -> None:
    """Fail before any work if an output file cannot be written where it is asked for;
    `regular`: it must be a regular file (a results file is read back to resume: a device
    such as /dev/full or /dev/zero never ends)."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{option} {path}: is a directory")
    if regular and path.exists() and not path.is_file():
        raise DataError(
            f"{option} {path}: not a regular file (a results file is read back to resume)"
        )
    existing = path.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise DataError(f"{option} {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK):
        raise DataError(f"{option} {path}: cannot write in {existing}")


class ResultWriter:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._handle: TextIO | None = None
        self._lock: TextIO | None = None
        #: the metadata line read back by `existing()` (None: the file has none)
        self.meta: RunMeta | None = None
        #: the metadata line `create()` writes first into an empty file
        self.new_meta: RunMeta | None = None

    def lock(self) -> None:
        """Refuse a second process on the same file (until this writer closes)."""
        if self.path.exists() and not self.path.is_file():
            raise DataError(f"{self.path}: not a regular file (a results file is read back)")
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on POSIX: no lock
            return
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            handle = lock_path.open("a+", encoding="utf-8")
        except OSError as exc:
            raise io_error(self.path, exc) from exc
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            handle.close()
            raise DataError(
                f"{self.path} is being written by another anvil eval (pid {holder}); "
                "wait for it to finish or use another --out"
            ) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
        except OSError as exc:
            handle.close()
            raise io_error(lock_path, exc) from exc
        self._lock = handle

    def drop(self, pairs: set[tuple[str, str]]) -> None:
        """Remove the lines of these (case id, metric) pairs, atomically (to re-run them)."""
        if pairs:
            self.rewrite(pairs, None)

    def rewrite(self, pairs: set[tuple[str, str]], meta: RunMeta | None) -> None:
        """Rewrite the file atomically without the lines of `pairs`, and with `meta` as its
        metadata line when given (else the one it has, if any)."""
        if not self.path.exists():
            return
        kept = []
        for number, chunk in enumerate(self._read().split(b"\n"), 1):
            if not chunk.strip():
                continue
            item = self._parse(chunk, number)
            if is_meta(item):
                if meta is None:
                    kept.append(chunk + b"\n")
            elif (str(item["case_id"]), item["metric"]) not in pairs:
                kept.append(chunk + b"\n")
        if meta is not None:
            kept.insert(0, (json.dumps(meta.to_line(), ensure_ascii=False) + "\n").encode())
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        try:
            tmp.write_bytes(b"".join(kept))
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)  # the results file itself is untouched
            raise io_error(self.path, exc) from exc

    def _read(self) -> bytes:
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise io_error(self.path, exc, "cannot read") from exc

    def existing(self) -> list[dict[str, Any]]:
        """Lines already written; a torn final line (killed mid-write) is truncated away."""
        if not self.path.exists():
            return []
        raw = self._read()
        complete, newline, torn = raw.rpartition(b"\n")
        lines = [
            self._parse(chunk, number)
            for number, chunk in enumerate(complete.split(b"\n"), 1)
            if chunk.strip()
        ]
        if torn.strip():
            try:
                try:
                    number = complete.count(b"\n") + 2 if newline else 1
                    lines.append(self._parse(torn, number))
                    with self.path.open("ab") as handle:  # whole line, newline missing
                        handle.write(b"\n")
                except DataError:
                    with self.path.open("r+b") as handle:  # torn line: drop it
                        handle.truncate(len(complete) + len(newline))
            except OSError as exc:
                raise io_error(self.path, exc) from exc
        self.meta = None
        if lines and is_meta(lines[0]):
            self.meta = RunMeta.from_line(lines.pop(0), f"{self.path}:1")
        return lines

    def _parse(self, chunk: bytes, number: int) -> dict[str, Any]:
        """A result line, or the metadata line when it is the first; else a DataError."""
        try:
            item = json.loads(chunk)
        except ValueError:
            item = None
        if is_meta(item):
            if number != 1:
                raise DataError(
                    f"{self.path}:{number}: a second metadata line (only the first line is "
                    "one); use another --out"
                )
            return item
        if not isinstance(item, dict) or "metric" not in item or "case_id" not in item:
            raise DataError(
                f"{self.path}:{number}: not a result line of anvil eval; use another --out"
            )
        return item

    def create(self) -> None:
        """Open the file for appending (creating it, and its folder, if needed); an empty
        file starts with `new_meta`, when set."""
        if self._handle is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._handle = self.path.open("a", encoding="utf-8")
            except OSError as exc:
                raise io_error(self.path, exc) from exc
            if self.new_meta is not None and self._handle.tell() == 0:
                self.write(self.new_meta.to_line())

    def write(self, line: dict[str, Any]) -> None:
        """Append one line, on disk before this returns. A failed write (a full disk) may
        leave part of the line: the next run's `existing` cuts it off, so every complete
        line before it stays readable and the run resumes from there."""
        self.create()
        assert self._handle is not None
        try:
            self._handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError as exc:
            self._abandon()
            raise io_error(self.path, exc) from exc

    def _abandon(self) -> None:
        """Drop a handle whose buffer could not be written (closing it would try again)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()

    def close(self) -> None:
        """Close the file, then release the lock (even when closing fails)."""
        try:
            if self._handle is not None:
                handle, self._handle = self._handle, None
                try:
                    handle.close()
                except OSError as exc:
                    raise io_error(self.path, exc) from exc
        finally:
            if self._lock is not None:
                self._lock.close()  # closing the file releases the lock
                self._lock = None
