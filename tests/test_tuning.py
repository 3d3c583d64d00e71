"""Host tuning without a model: the choice rule, the profile file, and how runs without
--model find the tuned file (fake GGUF files stand in for converted models)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local import tuning
from anvil_local.catalogue import add_converted, default_entry
from anvil_local.cli import main
from anvil_local.judge.convert import keeps_precision
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.settings import JudgeSettings, default_threads, host_threads
from anvil_local.metrics.calibration import Calibration
from anvil_local.tuning import HostProfile, Measurement, TuningError, choose


def m(model: str, threads: int, prompt: float, generated: float = 100.0) -> Measurement:
    return Measurement(model, "Q8_0", threads, prompt, generated)


@pytest.fixture
def unpinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tuning.MODEL_ENV, raising=False)


def fake_conversion(tmp_path: Path, fmt: str = "Q8_0"):
    path = tmp_path / f"fake.{fmt}.gguf"
    path.write_bytes(b"GGUF" + fmt.encode() * 64)
    return add_converted(default_entry(), fmt, path, "test")


def profile_for(use: str, threads: int = 1, **changes) -> HostProfile:
    source = default_entry()
    fields = dict(
        host=tuning.host_key(),
        cpu="test CPU",
        llama_cpp="0",
        source=source.name,
        source_sha256=source.sha256,
        use=use,
        threads=threads,
        measured=(m(source.name, threads, 200.0), m(use, threads, 400.0)),
        tuned_at="2026-12-01T00:00:00+00:00",
    )
    fields.update(changes)
    return HostProfile(**fields)


def test_precision_is_kept_only_by_more_bits_per_weight():
    assert keeps_precision("Q4_1", "Q8_0") and keeps_precision("Q4_1", "F16")
    assert keeps_precision("Q8_0", "F16")
    assert not keeps_precision("Q4_1", "Q4_0")  # another 4-bit grid: another judge
    assert not keeps_precision("Q8_0", "Q8_0") and not keeps_precision("F16", "Q8_0")
    assert not keeps_precision("", "F16")  # unknown source: never assumed


def test_choose_keeps_the_shipped_file_unless_a_conversion_is_clearly_faster():
    base = "shipped"
    close = [m(base, 2, 300.0), m("q8", 2, 310.0)]
    assert choose(close, base) == (base, 2)
    clear = [m(base, 2, 300.0), m(base, 1, 200.0), m("q8", 2, 600.0), m("q8", 1, 650.0)]
    assert choose(clear, base) == ("q8", 1)  # the chosen file's own fastest thread count
    two = [m(base, 2, 300.0), m("q8", 2, 600.0), m("f16", 2, 620.0, generated=40.0)]
    assert choose(two, base) == ("q8", 2)  # generation counts too: f16 loses on the probe
    slow_threads = [m(base, 2, 300.0), m(base, 1, 350.0)]
    assert choose(slow_threads, base) == (base, 1)


def test_thread_options_are_all_cores_and_half():
    assert tuning.thread_options(1) == [1]
    assert tuning.thread_options(2) == [2, 1]
    assert tuning.thread_options(16) == [16, 8]


def test_candidate_formats_refuse_formats_that_would_change_the_judge():
    entry = default_entry()
    assert tuning.candidate_formats(entry, ["q8_0", "Q8_0", "F16"]) == ["Q8_0", "F16"]
    with pytest.raises(TuningError, match="Q4_0 does not hold more bits"):
        tuning.candidate_formats(entry, ["Q4_0"])
    with pytest.raises(TuningError, match="unknown format"):
        tuning.candidate_formats(entry, ["Q5_K"])


def test_profile_round_trips_per_host_and_a_damaged_one_is_ignored(caplog):
    assert tuning.load_profile() is None
    profile = profile_for("anything")
    tuning._write(profile)
    assert tuning.profile_path().name == f"{tuning.host_key()[:16]}.json"
    assert tuning.load_profile() == profile
    tuning.profile_path().write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert tuning.load_profile() is None
    assert "anvil models tune" in caplog.text


def test_runs_without_model_use_the_tuned_file_and_threads(tmp_path: Path, unpinned):
    entry = fake_conversion(tmp_path)
    tuning._write(profile_for(entry.name, threads=1))
    model = ResolvedModel.resolve(None)
    assert (model.name, model.sha256) == (entry.name, entry.sha256)
    assert model.faithful_source() == (default_entry().name, default_entry().sha256)
    assert host_threads() == 1 and JudgeSettings().resolved_threads() == 1
    assert JudgeSettings(threads=3).resolved_threads() == 3


def test_the_pin_and_a_named_model_win_over_the_tuned_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    q8 = fake_conversion(tmp_path)
    f16 = fake_conversion(tmp_path, "F16")
    tuning._write(profile_for(q8.name))
    monkeypatch.setenv(tuning.MODEL_ENV, f16.name)
    assert ResolvedModel.resolve(None).name == f16.name
    monkeypatch.delenv(tuning.MODEL_ENV)
    assert ResolvedModel.resolve(f16.name).name == f16.name
    assert ResolvedModel.resolve(None).name == q8.name


def test_a_lossy_conversion_is_not_faithful(tmp_path: Path):
    entry = fake_conversion(tmp_path, "Q4_0")
    model = ResolvedModel.resolve(entry.name)
    assert model.source == default_entry().name and model.faithful_source() is None


def test_untuned_stale_or_missing_choices_fall_back_to_the_shipped_file(
    tmp_path: Path, caplog, unpinned
):
    shipped = default_entry()
    assert tuning.default_judge(tune_now=False) == shipped
    entry = fake_conversion(tmp_path)
    tuning._write(profile_for(entry.name, source_sha256="0" * 64))  # for another file
    assert tuning.default_judge(tune_now=False) == shipped
    tuning._write(profile_for(entry.name))
    Path(entry.store_path()).unlink()
    with caplog.at_level(logging.WARNING):
        assert tuning.default_judge(tune_now=False) == shipped
    assert "is gone" in caplog.text


def test_first_use_tunes_once_and_a_failed_tuning_keeps_the_shipped_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog, unpinned
):
    entry = fake_conversion(tmp_path)
    calls = []

    def fake_tune() -> HostProfile:
        calls.append(1)
        profile = profile_for(entry.name)
        tuning._write(profile)
        return profile

    monkeypatch.setattr(tuning, "tune", fake_tune)
    assert tuning.default_judge() == entry
    assert tuning.default_judge() == entry
    assert len(calls) == 1

    tuning.profile_path().unlink()

    def failing_tune() -> HostProfile:
        raise TuningError("no speed")

    monkeypatch.setattr(tuning, "tune", failing_tune)
    with caplog.at_level(logging.WARNING):
        assert tuning.default_judge() == default_entry()
    assert "tuning failed (no speed)" in caplog.text


def test_a_map_fitted_on_the_source_serves_its_faithful_conversion():
    sha = "a" * 64
    calibration = Calibration.from_dict(
        {"shipped": {"sha256": sha, "scores": [0.0, 1.0], "values": [0.2, 0.8]}}
    )
    fitted = calibration.maps["shipped"]
    assert calibration.for_model("shipped-q8_0", "b" * 64, ("shipped", sha)) is fitted
    assert calibration.for_model("shipped-q8_0", "b" * 64, ("shipped", "c" * 64)) is None
    assert calibration.for_model("shipped-q8_0", "b" * 64, None) is None


def test_tune_cli_refuses_a_lossy_format_in_one_line():
    result = CliRunner().invoke(main, ["models", "tune", "--format", "Q4_0"])
    assert result.exit_code == 2
    assert "Q4_0" in result.output and "Traceback" not in result.output


def test_doctor_names_the_default_judge(tmp_path: Path, unpinned):
    from anvil_local.doctor import _cpu, _tuning

    settings = {f.label: f.value for f in _cpu()}
    assert settings["batch size"].startswith("512 tokens (the default for --batch-size")
    assert settings["threads"].endswith("all cores)")
    assert "not tuned on this host yet" in _tuning()[0].value
    entry = fake_conversion(tmp_path)
    tuning._write(profile_for(entry.name, threads=1))
    found = _tuning()[0].value
    assert found.startswith(f"{entry.name}, 1 threads, 400 prompt tokens/s")
    assert json.loads(tuning.profile_path().read_text())["use"] == entry.name
    assert {f.label: f.value for f in _cpu()}["threads"].startswith("1 (")
    assert default_threads() >= 1
