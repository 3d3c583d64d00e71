"""Test isolation: every test gets its own data and cache dirs. Real-model tests share the
default model, pulled once into the normal user data dir and reused between runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anvil_local.models.resolve import resolve_model
from anvil_local.paths import CACHE_DIR_ENV, DATA_DIR_ENV

pytest_plugins = ["pytester"]

_REAL_DATA_DIR = os.environ.get(DATA_DIR_ENV)
_REAL_CACHE_DIR = os.environ.get(CACHE_DIR_ENV)


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


@pytest.fixture(scope="session")
def llama_corpus() -> Path:
    """llama.cpp's real chat templates and vocabulary GGUFs, from the llama-cpp-python source
    distribution on the package index: fetched once into the real cache dir and reused."""
    import platformdirs

    from tests.llama_corpus import corpus_dir

    cache = Path(_REAL_CACHE_DIR or platformdirs.user_cache_dir("anvil-local"))
    return corpus_dir(cache)


@pytest.fixture
def real_data_dir(monkeypatch: pytest.MonkeyPatch, default_model_path: Path) -> Path:
    """Point the data dir back at where the default model is, for code that resolves it."""
    if _REAL_DATA_DIR is None:
        monkeypatch.delenv(DATA_DIR_ENV)
    else:
        monkeypatch.setenv(DATA_DIR_ENV, _REAL_DATA_DIR)
    return default_model_path


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--n-gpu-layers",
        type=int,
        default=0,
        help="layers of the session's judge offloaded to a GPU (-1: all; needs a CUDA build "
        "of llama-cpp-python, see benchmarks/gpu_check.sh)",
    )


@pytest.fixture(scope="session")
def judge(default_model_path: Path, request: pytest.FixtureRequest):
    """One loaded default model for the whole session (as a worker process would)."""
    from anvil_local.judge.pool import JudgePool
    from anvil_local.judge.settings import JudgeSettings

    layers = request.config.getoption("--n-gpu-layers")
    pool = JudgePool()  # its own: a test that clears the process's pool cannot close it
    yield pool.get(resolve_model(default_model_path, JudgeSettings(n_gpu_layers=layers)))
    pool.clear()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Real-model tests are marked `model`; CI must run them (refuse to deselect there)."""
    if os.environ.get("CI") == "true" and "not model" in (config.getoption("-m") or ""):
        raise pytest.UsageError("CI runs the real-model tests: do not pass -m 'not model'")
