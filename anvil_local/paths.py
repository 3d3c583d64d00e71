"""Where anvil keeps things on this machine: the data dir (pulled and converted models, the
user's catalogue entries, host tuning) and the cache dir (results, steps, priors, native
checks). Both follow platformdirs and can be moved with an environment variable."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DATA_DIR_ENV = "ANVIL_DATA_DIR"
CACHE_DIR_ENV = "ANVIL_CACHE_DIR"


def data_dir() -> Path:
    """Where pulled models, user catalogue entries and host profiles live."""
    override = os.environ.get(DATA_DIR_ENV)
    return Path(override) if override else Path(platformdirs.user_data_dir("anvil-local"))


def cache_dir() -> Path:
    """Where the result, step and prior caches and native-check verdicts live."""
    override = os.environ.get(CACHE_DIR_ENV)
    return Path(override) if override else Path(platformdirs.user_cache_dir("anvil-local"))
