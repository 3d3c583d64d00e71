"""Host tuning without a model: the choice rule, the profile file, and how runs without
--model find the tuned file (fake GGUF files stand in for converted models)."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.convert import keeps_precision
from anvil_local.judge.settings import JudgeSettings, default_threads
from anvil_local.metrics.calibration import Calibration
from anvil_local.models import settle, tuning
from anvil_local.models.catalogue import add_converted, default_entry
from anvil_local.models.cpu_load import CpuMeter
from anvil_local.models.resolve import MODEL_ENV, resolve_model
from anvil_local.models.tuning import HostProfile, Measurement, Tuned, TuningError, choose


def m(model: str, threads: int, prompt: float, generated: float = 100.0) -> Measurement:
    return Measurement(model, "Q8_0", threads, prompt, generated)


@pytest.fixture
def unpinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)


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
    assert choose(clear, base) == ("q8", 2)  # fewer threads only when clearly faster
    fewer = [m(base, 2, 300.0), m("q8", 2, 500.0), m("q8", 1, 700.0)]
    assert choose(fewer, base) == ("q8", 1)  # the chosen file's own fastest thread count
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
    model = resolve_model(None)
    assert (model.name, model.sha256) == (entry.name, entry.sha256)
    assert model.faithful_source() == (default_entry().name, default_entry().sha256)
    assert model.settings.threads == 1  # the tuned count, chosen when the model is resolved
    assert resolve_model(None, JudgeSettings(threads=3)).settings.threads == 3
    tuning._write(profile_for(entry.name, threads=4))
    assert resolve_model(None, workers=2).settings.threads == 2  # split over the workers
    assert resolve_model(None, workers=8).settings.threads == 1
    assert JudgeSettings().thread_count() == default_threads()  # unresolved: all cores


def test_the_pin_and_a_named_model_win_over_the_tuned_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    q8 = fake_conversion(tmp_path)
    f16 = fake_conversion(tmp_path, "F16")
    tuning._write(profile_for(q8.name))
    monkeypatch.setenv(MODEL_ENV, f16.name)
    assert resolve_model(None).name == f16.name
    monkeypatch.delenv(MODEL_ENV)
    assert resolve_model(f16.name).name == f16.name
    assert resolve_model(None).name == q8.name


def test_a_lossy_conversion_is_not_faithful(tmp_path: Path):
    entry = fake_conversion(tmp_path, "Q4_0")
    model = resolve_model(entry.name)
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

    def fake_tune() -> Tuned:
        calls.append(1)
        profile = profile_for(entry.name)
        tuning._write(profile)
        return Tuned(profile, recorded=True)

    monkeypatch.setattr(tuning, "tune", fake_tune)
    monkeypatch.setattr(tuning, "ensure_model", lambda entry: Path("shipped.gguf"))
    assert tuning.default_judge() == entry
    assert tuning.default_judge() == entry
    assert len(calls) == 1

    tuning.profile_path().unlink()

    def failing_tune() -> Tuned:
        raise TuningError("no speed")

    monkeypatch.setattr(tuning, "tune", failing_tune)
    with caplog.at_level(logging.WARNING):
        assert tuning.default_judge() == default_entry()
    assert "tuning failed (no speed)" in caplog.text


def test_a_map_fitted_on_the_source_serves_its_conversion_only_where_shown_to_hold(caplog):
    sha = "a" * 64
    table = {"sha256": sha, "scores": [0.0, 1.0], "values": [0.2, 0.8]}
    holding = Calibration.from_dict({"shipped": {**table, "holds_on": {"q8_0": "measured"}}})
    fitted = holding.maps["shipped"]
    assert fitted.holds_on == (("Q8_0", "measured"),)
    assert holding.for_model("shipped-q8_0", "b" * 64, ("shipped", sha), "Q8_0") is fitted
    assert holding.for_model("shipped-q8_0", "b" * 64, ("shipped", "c" * 64), "Q8_0") is None
    assert holding.for_model("shipped-q8_0", "b" * 64, None, "Q8_0") is None
    assert holding.for_model("shipped-f16", "b" * 64, ("shipped", sha), "F16") is None
    silent = Calibration.from_dict({"shipped": table})
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert silent.for_model("shipped-q8_0", "b" * 64, ("shipped", sha), "Q8_0") is None
    warned = [r for r in caplog.records if "not shown to hold on Q8_0" in r.getMessage()]
    assert len(warned) == 1  # once per process, not once per case
    assert "--model shipped" in warned[0].getMessage()


def test_holds_on_needs_evidence_for_each_format():
    table = {"sha256": "a" * 64, "scores": [0.0, 1.0], "values": [0.2, 0.8]}
    for bad in ({"Q8_0": ""}, ["Q8_0"], {"Q8_0": 1}):
        with pytest.raises(MetricDefinitionError, match="holds_on"):
            Calibration.from_dict({"shipped": {**table, "holds_on": bad}})
    again = Calibration.from_dict({"shipped": {**table, "holds_on": {"Q8_0": "why"}}})
    assert again.to_dict()["shipped"]["holds_on"] == {"Q8_0": "why"}


def test_a_map_serves_its_own_file_under_another_name():
    """A catalogue file given by its path is named by the file, not the catalogue: the map
    fitted on the same bytes still applies, and no other file's does."""
    sha = "a" * 64
    calibration = Calibration.from_dict(
        {"shipped": {"sha256": sha, "scores": [0.0, 1.0], "values": [0.2, 0.8]}}
    )
    assert calibration.for_model("shipped.Q4_1.gguf", sha) is calibration.maps["shipped"]
    assert calibration.for_model("shipped.Q4_1.gguf", "b" * 64) is None


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


# -- a busy or noisy machine does not decide ---------------------------------------------


class FakeMeter:
    """Stands in for /proc/stat: every probe sees `others` of the CPU used by others."""

    def __init__(self, others: float | None) -> None:
        self.others = others

    def start(self) -> None:
        pass

    def stop(self) -> float | None:
        return self.others


def fake_probes(monkeypatch: pytest.MonkeyPatch, speeds: dict[int, list[float]]):
    """The probe answers, per thread count, the next of its prompt speeds."""
    from anvil_local.judge.native import ProbeResult

    calls: list[int] = []
    monkeypatch.setattr(tuning, "ensure_model", lambda entry: Path("shipped.gguf"))
    monkeypatch.setattr(tuning, "ensure_native_ok", lambda *a, **k: None)

    def probe(path: Path, threads: int, throughput: bool = False) -> ProbeResult:
        calls.append(threads)
        speed = speeds[threads][sum(1 for c in calls if c == threads) - 1]
        return ProbeResult("", "0", speed, 80.0, threads)

    monkeypatch.setattr(tuning, "probe", probe)
    return calls


def test_a_quiet_steady_measurement_is_recorded(monkeypatch: pytest.MonkeyPatch):
    fake_probes(monkeypatch, {2: [600.0, 610.0, 605.0], 1: [350.0, 352.0, 349.0]})
    found = tuning.tune(formats=(), threads=[2, 1], rounds=3, meter=FakeMeter(0.02))
    assert found.recorded and found.reason == ""
    assert tuning.load_profile() == found.profile
    two = next(x for x in found.profile.measured if x.threads == 2)
    assert (two.rounds, two.prompt_tokens_per_s) == (3, 605.0)  # the median round
    seconds = [tuning.probe_seconds(p, 80.0) for p in (600.0, 610.0, 605.0)]
    assert two.spread == pytest.approx((max(seconds) - min(seconds)) / seconds[2], abs=1e-4)
    assert found.profile.threads == 2


def test_a_busy_machine_records_nothing_and_stops_after_one_round(
    monkeypatch: pytest.MonkeyPatch,
):
    """Under load 1 thread looks faster than 2 (the issue's 73 vs 188 tokens/s): that choice
    must not be written."""
    calls = fake_probes(monkeypatch, {2: [73.0] * 3, 1: [188.0] * 3})
    found = tuning.tune(formats=(), threads=[2, 1], rounds=3, meter=FakeMeter(0.5))
    assert not found.recorded and "machine is busy" in found.reason and "50%" in found.reason
    assert found.profile.threads == 1  # what it would have chosen
    assert tuning.load_profile() is None  # ... and did not write
    assert calls == [2, 1]  # one round: more would not change the verdict
    assert tuning.deferred() == found.reason


def test_a_stray_round_is_measured_again_not_refused(monkeypatch: pytest.MonkeyPatch):
    """One slow round of the winner (the rounds 100% apart) makes the thread choice
    uncertain: both thread counts are measured again until the stray round stops
    counting, then the choice is recorded."""
    calls = fake_probes(
        monkeypatch, {2: [600.0, 300.0, 610.0, *[605.0] * 9], 1: [350.0, 345.0, 355.0] * 4}
    )
    found = tuning.tune(formats=(), threads=[2, 1], rounds=3, meter=FakeMeter(0.0))
    assert found.recorded and found.profile.threads == 2
    two = next(x for x in found.profile.measured if x.threads == 2)
    assert two.spread > 0.5 and 3 < two.rounds < tuning.MAX_ROUNDS
    assert len(calls) == 2 * two.rounds  # interleaved: both were measured again
    assert "1 threads are not 10% faster than 2" in found.basis


# -- settling: more rounds until the choice is certain, with a fake measurer -------------


class FakeHost:
    """A measurer playing each candidate's rounds in turn (cycling), and a clock that
    advances `probe_s` per probe."""

    def __init__(self, rounds: dict[tuple[str, int], list[float]], others: float = 0.0):
        self.rounds = rounds
        self.others = others
        self.calls: list[tuple[str, int]] = []
        self.now = 0.0
        self.probe_s = 5.0

    def __call__(self, entry, threads: int) -> tuple[float, float, float | None]:
        key = (entry.name, threads)
        played = self.calls.count(key)
        self.calls.append(key)
        self.now += self.probe_s
        speeds = self.rounds[key]
        return speeds[played % len(speeds)], 80.0, self.others

    def clock(self) -> float:
        return self.now

    def count(self, name: str, threads: int) -> int:
        return self.calls.count((name, threads))


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """No real model, probe or conversion: the shipped file and a fake Q8_0 beside it."""
    q8 = fake_conversion(tmp_path)
    monkeypatch.setattr(tuning, "ensure_model", lambda entry: Path("shipped.gguf"))
    monkeypatch.setattr(tuning, "ensure_native_ok", lambda *a, **k: None)
    monkeypatch.setattr(tuning, "convert", lambda name, fmt: q8)
    return default_entry().name, q8.name


def test_a_quiet_host_records_a_clear_winner_despite_a_noisy_loser(host):
    """The issue's host: Q8_0 2 threads 728 tok/s, 1 thread 389 with rounds 20% apart,
    the shipped file 328. The old noise rule refused; the winner leads by 1.9x."""
    shipped, q8 = host
    fake = FakeHost(
        {
            (q8, 2): [728.0, 660.0, 735.0],
            (q8, 1): [389.0, 290.0, 395.0],
            (shipped, 2): [328.0, 318.0, 335.0],
            (shipped, 1): [190.0, 185.0, 195.0],
        }
    )
    found = tuning.tune(threads=[2, 1], measure=fake, clock=fake.clock)
    assert found.recorded and found.reason == ""
    assert (found.profile.use, found.profile.threads) == (q8, 2)
    assert tuning.load_profile() == found.profile
    loser = next(m for m in found.profile.measured if (m.model, m.threads) == (q8, 1))
    assert loser.spread > 0.15  # what used to block the choice
    assert len(fake.calls) == 4 * tuning.DEFAULT_ROUNDS  # certain after the first rounds
    assert found.basis.startswith(f"{q8} is faster than {shipped} (1.57x, at least 1.4")
    assert "1 threads are not 10% faster than 2 (0.7" in found.basis


def test_close_candidates_keep_measuring_then_give_up_at_the_budget(host):
    """1 thread about 10% faster than 2 (the margin), rounds overlapping: only those two
    are measured again, until the budget; nothing is recorded, with a one-line reason."""
    shipped, _ = host
    fake = FakeHost({(shipped, 2): [560.0, 600.0, 580.0], (shipped, 1): [640.0, 700.0, 670.0]})
    found = tuning.tune(formats=(), threads=[2, 1], measure=fake, clock=fake.clock, budget_s=60.0)
    assert not found.recorded
    assert "too close to choose with confidence" in found.reason
    assert "60 s budget" in found.reason and "\n" not in found.reason
    assert (
        f"{shipped} with 1 threads" in found.reason and f"{shipped} with 2 threads" in found.reason
    )
    assert fake.count(shipped, 2) == fake.count(shipped, 1) == 6  # 60 s of 5 s probes
    assert fake.now <= 60.0
    assert tuning.load_profile() is None and tuning.deferred() == found.reason


def test_close_candidates_give_up_at_the_most_rounds(host):
    shipped, _ = host
    fake = FakeHost({(shipped, 2): [560.0, 600.0, 580.0], (shipped, 1): [640.0, 700.0, 670.0]})
    found = tuning.tune(
        formats=(), threads=[2, 1], measure=fake, clock=fake.clock, max_rounds=5, budget_s=1e9
    )
    assert not found.recorded and "(limit: 5 rounds)" in found.reason
    assert len(fake.calls) == 10


def test_only_the_contested_candidates_are_measured_again(host):
    """Q8_0 clearly beats the shipped file; its thread counts are close: the shipped file
    is not measured again."""
    shipped, q8 = host
    fake = FakeHost(
        {
            (q8, 2): [700.0, 640.0, 720.0],
            (q8, 1): [760.0, 700.0, 790.0],
            (shipped, 2): [330.0],
            (shipped, 1): [190.0],
        }
    )
    found = tuning.tune(threads=[2, 1], measure=fake, clock=fake.clock, budget_s=100.0)
    assert not found.recorded
    assert fake.count(shipped, 2) == fake.count(shipped, 1) == 3
    assert fake.count(q8, 2) == fake.count(q8, 1) > 3


def test_settle_false_records_the_medians_choice(host):
    shipped, _ = host
    fake = FakeHost({(shipped, 2): [560.0, 600.0, 580.0], (shipped, 1): [640.0, 700.0, 670.0]})
    found = tuning.tune(formats=(), threads=[2, 1], measure=fake, clock=fake.clock, settle=False)
    assert found.recorded and len(fake.calls) == 6
    assert (found.profile.use, found.profile.threads) == choose(found.profile.measured, shipped)


def test_a_busy_host_refuses_even_a_clear_winner(host):
    shipped, q8 = host
    rounds = {(q8, 2): [728.0], (q8, 1): [389.0], (shipped, 2): [328.0], (shipped, 1): [190.0]}
    fake = FakeHost(rounds, others=0.4)
    found = tuning.tune(threads=[2, 1], measure=fake, clock=fake.clock)
    assert not found.recorded and "the machine is busy" in found.reason
    assert len(fake.calls) == 4  # one round
    assert tuning.load_profile() is None


def test_a_host_that_turns_busy_while_settling_refuses_as_busy(host):
    shipped, _ = host
    fake = FakeHost({(shipped, 2): [560.0, 600.0, 580.0], (shipped, 1): [640.0, 700.0, 670.0]})

    def measure(entry, threads):
        fake.others = 0.6 if len(fake.calls) >= 6 else 0.0
        return fake(entry, threads)

    found = tuning.tune(formats=(), threads=[2, 1], measure=measure, clock=fake.clock)
    assert not found.recorded and "the machine is busy" in found.reason
    assert len(fake.calls) == 8  # the first extra round found it busy


def test_median_span_is_the_range_for_few_rounds_and_drops_strays_with_more():
    assert settle.median_span([3.0, 1.0, 2.0]) == (1.0, 3.0)
    assert settle.median_span([1.0, 9.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.1]) == (1.0, 2.0)
    assert settle._coverage(8, 2) >= settle.COVERAGE > settle._coverage(8, 3)
    assert settle._coverage(3, 1) == pytest.approx(0.75)


def test_decide_names_what_it_is_uncertain_between():
    a = replace(m("shipped", 2, 300.0), low=1.0, high=1.2)
    b = replace(m("shipped", 1, 376.0), low=0.95, high=1.05)  # a median of 1.0 s
    decision = settle.decide([a, b], "shipped", tuning.MARGIN)
    assert not decision.certain
    assert decision.contested == {("shipped", 2), ("shipped", 1)}
    assert decision.why.startswith("shipped with 1 threads (0.95-1.05 s a probe) may or may")
    clear = replace(m("shipped", 1, 600.0), low=0.7, high=0.8)
    decision = settle.decide([a, clear], "shipped", tuning.MARGIN)
    assert decision.certain and decision.threads == 1 and decision.contested == frozenset()
    assert decision.why.startswith("1 threads are faster than 2 (1.57x, at least 1.25x)")


def test_two_conversions_that_both_beat_the_shipped_file_must_be_told_apart():
    base = replace(m("shipped", 2, 300.0), low=1.1, high=1.2)
    q8 = replace(m("q8", 2, 600.0), low=0.72, high=0.78)
    f16 = replace(m("f16", 2, 610.0), low=0.73, high=0.77)
    decision = settle.decide([base, q8, f16], "shipped", tuning.MARGIN)
    assert not decision.certain and decision.model == "f16"
    assert decision.contested == {("q8", 2), ("f16", 2)}
    assert "may or may not be faster than" in decision.why  # no margin between the two
    apart = replace(q8, prompt_tokens_per_s=500.0, low=0.82, high=0.86)
    decision = settle.decide([base, apart, f16], "shipped", tuning.MARGIN)
    assert decision.certain and decision.model == "f16"


def test_tune_cli_says_what_it_measured_and_why_it_chose(host, monkeypatch):
    shipped, q8 = host
    fake = FakeHost(
        {(q8, 2): [728.0], (q8, 1): [389.0], (shipped, 2): [328.0], (shipped, 1): [190.0]}
    )
    monkeypatch.setattr(tuning, "_measure_once", lambda entry, count, meter: fake(entry, count))
    result = CliRunner().invoke(main, ["models", "tune", "--threads", "2", "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "MEDIAN IN" in result.output and "ROUNDS" in result.output
    assert f"chosen because {q8} is faster than {shipped} (" in result.output
    assert f"default judge here: {q8}, 2 threads" in result.output


def test_a_deferred_tuning_is_not_retried_by_every_run(
    monkeypatch: pytest.MonkeyPatch, caplog, unpinned
):
    calls = []

    def busy_tune() -> Tuned:
        calls.append(1)
        tuning._defer("the machine is busy")
        return Tuned(profile_for(default_entry().name), recorded=False, reason="busy")

    monkeypatch.setattr(tuning, "tune", busy_tune)
    with caplog.at_level(logging.WARNING):
        assert tuning.default_judge() == default_entry()
        assert tuning.default_judge() == default_entry()
    assert calls == [1]
    assert "nothing recorded: busy" in caplog.text
    data = json.loads(tuning._deferred_path().read_text())
    data["at"] -= tuning.DEFER_SECONDS + 1
    tuning._deferred_path().write_text(json.dumps(data))
    assert tuning.deferred() is None  # later, it tries again
    tuning.default_judge()
    assert calls == [1, 1]


def test_cpu_meter_counts_what_others_used(tmp_path: Path):
    stat = tmp_path / "stat"
    meter = CpuMeter(stat)
    meter.cpus = [0, 1]
    tick = meter._tick

    def write(busy: int) -> None:
        lines = ["cpu  0 0 0 0 0 0 0 0"]
        lines += [f"cpu{n} {busy} 0 0 1000 0 0 0 0" for n in (0, 1, 2)]
        stat.write_text("\n".join(lines) + "\n")

    write(0)
    meter.start()
    write(tick // 2)  # cpu0 and cpu1 each 0.5 s busy (cpu2 is not ours)
    meter._start = (meter._start[0], meter._start[1], meter._start[2] - 1.0)  # 1 s ago
    share = meter.stop()
    assert share is not None and 0.4 < share <= 0.5  # 1 s of 2 cores, minus our own use
    assert CpuMeter(tmp_path / "missing").stop() is None


def test_doctor_recheck_flags_a_choice_made_on_a_busy_machine():
    profile = profile_for("q8", threads=1, measured=(m("q8", 1, 188.0), m("q8", 2, 73.0)))
    quiet_one = m("q8", 1, 330.0)
    quiet_all = m("q8", 2, 635.0)
    problems = tuning.recheck(profile, quiet_one, quiet_all)
    assert any("tuning measured 188" in p for p in problems)
    assert any("2 threads read 635" in p for p in problems)
    assert tuning.recheck(profile, m("q8", 1, 190.0), m("q8", 2, 180.0)) == []


def test_doctor_lists_which_shipped_heads_apply_to_the_tuned_file(tmp_path: Path, unpinned):
    from anvil_local.doctor import _heads

    q8 = fake_conversion(tmp_path)
    source = default_entry()
    metric = (
        'type = "geval"\nname = "C"\nevaluation_params = ["input", "actual_output"]\n'
        'evaluation_steps = ["Compare."]\n'
    )
    table = (
        f'[calibration."{source.name}"]\nsha256 = "{source.sha256}"\n'
        "scores = [0.0, 1.0]\nvalues = [0.2, 0.8]\n"
    )
    root = tmp_path / "heads"
    root.mkdir()
    (root / "held.toml").write_text(metric + table + 'holds_on = { Q8_0 = "measured" }\n')
    (root / "unheld.toml").write_text(metric + table)
    (root / "plain.toml").write_text(metric)
    tuning._write(profile_for(q8.name))
    found = {f.label: f.value for f in _heads(None, root)}
    assert found == {
        "head held.toml": f"applies on {q8.name}: fitted on {source.name}, holds on Q8_0: measured",
        "head unheld.toml": (
            f"not applied on {q8.name}: fitted on {source.name}, not shown to hold on Q8_0 "
            "(no 'holds_on')"
        ),
    }
    on_source = [f.value for f in _heads(source.name, root)]
    assert on_source == [f"applies on {source.name}: fitted on this file"] * 2
