"""The on-disk cache: generated G-Eval steps, contextual priors and metric results, in SQLite.

Keys are sha256 digests of everything that decides the value (model sha256, canonical metric
definition, case content), so changing any of them misses. WAL mode and a busy timeout make
it safe for several processes at once. A cache file that SQLite cannot read (corrupt,
truncated, not a database) is set aside with a warning and a new one is started: a damaged
cache is never worth failing a run for. A cache that cannot be written (a full disk, a folder
without write access, a lock held past the busy timeout) stops the run with one line naming
it: going on would judge every pair again and store nothing.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from anvil_local.errors import DataError, io_error
from anvil_local.paths import cache_dir

log = logging.getLogger(__name__)

#: Bump when prompts or scoring change in a way that makes old entries wrong.
CACHE_VERSION = "6"  # 5: shorter DAG judgement questions; 6: chat formats from each template

_MIGRATIONS = [
    "CREATE TABLE IF NOT EXISTS steps (key TEXT PRIMARY KEY, steps TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, result TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS priors (key TEXT PRIMARY KEY, prior TEXT NOT NULL)",
]


def digest(*parts: Any) -> str:
    """A stable key over JSON-able parts."""
    blob = json.dumps([CACHE_VERSION, *parts], sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()


class Cache:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_dir() / "cache.sqlite3"
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self._conn = self._open()
            except sqlite3.OperationalError as exc:  # locked, cannot open: not damaged
                raise self._unusable(exc) from exc
            except OSError as exc:
                raise io_error(self.path.parent, exc, "cannot create the result cache") from exc
            except sqlite3.DatabaseError as exc:
                self._set_aside(exc)
                self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout=30000")
            self._wal(conn)
            for statement in _MIGRATIONS:
                conn.execute(statement)
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    @staticmethod
    def _wal(conn: sqlite3.Connection, patience: float = 30.0) -> None:
        """Switch to WAL. SQLite answers "locked" at once (no busy wait) while another process
        opens the same new file, so wait here as the busy timeout would."""
        deadline = time.monotonic() + patience
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _set_aside(self, exc: Exception) -> None:
        """Move an unreadable cache file (and its WAL) out of the way."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            part = self.path.with_name(self.path.name + suffix)
            if part.exists():
                part.replace(aside.with_name(aside.name + suffix))
        log.warning(
            "the cache %s could not be read (%s); set it aside as %s", self.path, exc, aside
        )

    def _run(self, sql: str, args: tuple) -> list[tuple]:
        with self._lock:
            try:
                return self._db().execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                raise self._unusable(exc) from exc
            except sqlite3.DatabaseError as exc:
                self._set_aside(exc)
                return self._db().execute(sql, args).fetchall()

    def _unusable(self, exc: sqlite3.OperationalError) -> DataError:
        return DataError(f"result cache {self.path}: {exc} (--no-cache runs without it)")

    def _get(self, table: str, column: str, key: str) -> Any | None:
        rows = self._run(f"SELECT {column} FROM {table} WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def _put(self, table: str, column: str, key: str, value: Any) -> None:
        blob = json.dumps(value, ensure_ascii=False)
        self._run(f"INSERT OR REPLACE INTO {table} (key, {column}) VALUES (?, ?)", (key, blob))

    def get_steps(self, key: str) -> list[str] | None:
        return self._get("steps", "steps", key)

    def put_steps(self, key: str, steps: list[str]) -> None:
        self._put("steps", "steps", key, steps)

    def get_prior(self, key: str) -> list[float] | None:
        return self._get("priors", "prior", key)

    def put_prior(self, key: str, prior: list[float]) -> None:
        self._put("priors", "prior", key, prior)

    def get_result(self, key: str) -> dict[str, Any] | None:
        return self._get("results", "result", key)

    def put_result(self, key: str, result: dict[str, Any]) -> None:
        self._put("results", "result", key, result)

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_OPEN: dict[str, Cache] = {}


def default_cache() -> Cache:
    """The process's cache at the configured location (re-read, so that a changed
    ANVIL_CACHE_DIR gets its own); closed by `close_caches()`, and at exit."""
    path = str(cache_dir() / "cache.sqlite3")
    if path not in _OPEN:
        _OPEN[path] = Cache(Path(path))
    return _OPEN[path]


def close_caches() -> None:
    """Close and forget every cache `default_cache()` opened."""
    while _OPEN:
        _, cache = _OPEN.popitem()
        cache.close()


atexit.register(close_caches)
