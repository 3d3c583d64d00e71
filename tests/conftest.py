"""Test isolation: every test gets its own data and cache dirs. Real-model tests share the
default model, pulled once into the normal user data dir and reused between runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anvil_local.models.resolve import resolve_model
from anvil_local.paths import DATA_DIR_ENV

pytest_plugins = ["pytester"]

_REAL_DATA_DIR = os.environ.get(DATA_DIR_ENV)


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ANVIL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    # The shipped file, whatever a host tuning chose: golden numbers and exact expectations
    # are the shipped file's. The tuning tests unset it.
    monkeypatch.setenv("ANVIL_MODEL", "smollm2-135m-instruct")
    return tmp_path


@pytest.fixture(scope="session")
def default_model_path() -> Path:
    """The default judge's GGUF, pulled on first use into the real data dir."""
    from anvil_local.models.catalogue import default_entry
    from anvil_local.models.store import ensure_model

    saved = os.environ.get(DATA_DIR_ENV)
    if _REAL_DATA_DIR is None:
        os.environ.pop(DATA_DIR_ENV, None)
    else:
        os.environ[DATA_DIR_ENV] = _REAL_DATA_DIR
    try:
        return ensure_model(default_entry())
    finally:
        if saved is not None:
            os.environ[DATA_DIR_ENV] = saved


@pytest.fixture
def real_data_dir(monkeypatch: pytest.MonkeyPatch, default_model_path: Path) -> Path:
    """Point the data dir back at where the default model is, for code that resolves it."""
    if _REAL_DATA_DIR is None:
        monkeypatch.delenv(DATA_DIR_ENV)
    else:
        monkeypatch.setenv(DATA_DIR_ENV, _REAL_DATA_DIR)
    return default_model_path


@pytest.fixture(scope="session")
def judge(default_model_path: Path):
    """One loaded default model for the whole session (as a worker process would)."""
    from anvil_local.judge.pool import JudgePool

    pool = JudgePool()  # its own: a test that clears the process's pool cannot close it
    yield pool.get(resolve_model(default_model_path))
    pool.clear()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Real-model tests are marked `model`; CI must run them (refuse to deselect there)."""
    if os.environ.get("CI") == "true" and "not model" in (config.getoption("-m") or ""):
        raise pytest.UsageError("CI runs the real-model tests: do not pass -m 'not model'")
