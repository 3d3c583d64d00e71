"""`anvil models tune` on the real default model: it converts, measures, records a choice,
and runs without --model then use that file and thread count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.models import tuning
from anvil_local.models.catalogue import default_entry
from anvil_local.models.resolve import MODEL_ENV
from anvil_local.paths import DATA_DIR_ENV
from anvil_local.run.results import result_items

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "examples" / "small_judge" / "consistency_check.toml"


@pytest.fixture
def tuned_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_model_path: Path) -> Path:
    """A data dir holding the shipped file (linked) and nothing tuned; no pin."""
    data = tmp_path / "data"
    (data / "models").mkdir(parents=True)
    (data / "models" / default_model_path.name).symlink_to(default_model_path)
    monkeypatch.setenv(DATA_DIR_ENV, str(data))
    monkeypatch.delenv(MODEL_ENV)
    return data


def cases(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    row = {
        "id": "bridge",
        "input": "The bridge on Mill Road closes on Monday for two weeks of repairs.",
        "actual_output": "The Mill Road bridge shuts on Monday for repairs.",
    }
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def eval_models(tmp_path: Path, name: str, *extra: str) -> list[dict]:
    out = tmp_path / f"{name}.jsonl"
    args = ["eval", "--metric", str(CHECK), "--data", str(cases(tmp_path)), "--out", str(out)]
    args += extra
    result = CliRunner().invoke(main, [*args, "--no-cache", "--no-progress"])
    assert result.exit_code in (0, 1), result.output
    return result_items(out)


def test_tune_measures_records_and_runs_without_model_use_the_choice(
    tuned_home: Path, tmp_path: Path
):
    """The real probe, conversion and record. The limits are lifted here: whether this
    machine is quiet, or its candidates close, is not what this test is about (the next
    one is)."""
    source = default_entry()
    found = tuning.tune(threads=[1, 2], rounds=2, busy_limit=1.01, settle=False)
    assert found.recorded
    profile = tuning.load_profile()
    assert profile == found.profile and profile.source_sha256 == source.sha256
    measured = {(m.model, m.threads) for m in profile.measured}
    q8 = f"{source.name}-q8_0"
    assert measured == {(source.name, 1), (source.name, 2), (q8, 1), (q8, 2)}
    assert all(m.prompt_tokens_per_s > 0 < m.generated_tokens_per_s for m in profile.measured)
    assert all(m.rounds == 2 and m.spread >= 0 for m in profile.measured)
    assert (profile.use, profile.threads) == tuning.choose(profile.measured, source.name)

    lines = eval_models(tmp_path, "tuned")
    assert [line["model"] for line in lines] == [profile.use]

    listed = CliRunner().invoke(main, ["models", "list"]).output.splitlines()
    assert "tuned" in next(row for row in listed if row.startswith(f"{profile.use} "))

    doctor = CliRunner().invoke(main, ["doctor", "--no-probe"])
    line = next(x for x in doctor.output.splitlines() if x.startswith("default judge"))
    assert line.split(None, 2)[2].startswith(f"{profile.use}, {profile.threads} threads")


def test_tune_beside_a_cpu_bound_process_records_nothing(tuned_home: Path):
    """A CPU-bound process on half the cores while `anvil models tune` measures: the CLI
    shows what it measured, says why nothing is recorded, exits 1, and writes no profile;
    a run without --model then uses the shipped file on all cores."""
    import os
    import subprocess
    import sys

    cores = len(os.sched_getaffinity(0))
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(max(1, cores // 2))
    ]
    try:
        result = CliRunner().invoke(main, ["models", "tune", "--rounds", "2"])
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert result.exit_code == 1, result.output
    assert "not recorded: other processes used" in result.output
    assert "the machine is busy" in result.output
    assert tuning.load_profile() is None
    assert tuning.deferred() is not None
    from anvil_local.models.resolve import resolve_model

    model = resolve_model(None)
    assert model.name == default_entry().name and model.settings.threads == cores


def test_a_converted_default_applies_the_map_fitted_on_the_shipped_file(
    tuned_home: Path, tmp_path: Path
):
    """Whatever this host measures, a profile that chose the Q8_0 file gives calibrated
    scores: the shipped file's map serves its precision-keeping conversion."""
    from anvil_local.models.store import convert

    source = default_entry()
    q8 = convert(source.name, "Q8_0")
    shipped = eval_models(tmp_path, "shipped", "--model", source.name)
    tuning._write(
        tuning.HostProfile(
            host=tuning.host_key(),
            cpu="",
            llama_cpp="",
            source=source.name,
            source_sha256=source.sha256,
            use=q8.name,
            threads=1,
            measured=(),
            tuned_at="",
        )
    )
    converted = eval_models(tmp_path, "converted")
    assert shipped[0]["model"] == source.name and converted[0]["model"] == q8.name
    assert shipped[0]["raw_score"] is not None and converted[0]["raw_score"] is not None
    assert converted[0]["score"] == pytest.approx(shipped[0]["score"], abs=0.1)
