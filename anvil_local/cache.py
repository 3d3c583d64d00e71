"""The on-disk cache: generated G-Eval steps and metric results, in SQLite.

Keys are sha256 digests of everything that decides the value (model sha256, canonical metric
definition, case content), so changing any of them misses. WAL mode and a busy timeout make
it safe for several processes at once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from anvil_local.catalogue import cache_dir

#: Bump when prompts or scoring change in a way that makes old entries wrong.
CACHE_VERSION = "1"

_MIGRATIONS = [
    "CREATE TABLE IF NOT EXISTS steps (key TEXT PRIMARY KEY, steps TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, result TEXT NOT NULL)",
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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
            for statement in _MIGRATIONS:
                conn.execute(statement)
            self._conn = conn
        return self._conn

    def _get(self, table: str, column: str, key: str) -> Any | None:
        with self._lock:
            row = (
                self._db().execute(f"SELECT {column} FROM {table} WHERE key = ?", (key,)).fetchone()
            )
        return json.loads(row[0]) if row else None

    def _put(self, table: str, column: str, key: str, value: Any) -> None:
        blob = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._db().execute(
                f"INSERT OR REPLACE INTO {table} (key, {column}) VALUES (?, ?)", (key, blob)
            )

    def get_steps(self, key: str) -> list[str] | None:
        return self._get("steps", "steps", key)

    def put_steps(self, key: str, steps: list[str]) -> None:
        self._put("steps", "steps", key, steps)

    def get_result(self, key: str) -> dict[str, Any] | None:
        return self._get("results", "result", key)

    def put_result(self, key: str, result: dict[str, Any]) -> None:
        self._put("results", "result", key, result)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


_DEFAULT: dict[str, Cache] = {}


def default_cache() -> Cache:
    """The process's cache at the configured location (re-read so tests can redirect it)."""
    path = str(cache_dir() / "cache.sqlite3")
    if path not in _DEFAULT:
        _DEFAULT[path] = Cache(Path(path))
    return _DEFAULT[path]
