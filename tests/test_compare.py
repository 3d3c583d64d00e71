"""`anvil compare`: its statistics against hand-computed values, its exit codes, and what it
says differed between the runs."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.comparison.compare import compare_files
from anvil_local.comparison.render import markdown
from anvil_local.errors import DataError
from anvil_local.metrics import MetricResult
from anvil_local.run.meta import DataInfo, MetricInfo, RunInfo, RunMeta
from anvil_local.run.output import ResultWriter
from anvil_local.run.records import ResultLine

SHA = "a" * 64


def meta(
    metrics: Sequence[str] = ("Tone",),
    sha: str = SHA,
    definition: str = "1",
    data: str = "d" * 64,
    anvil: str = "0.1.0",
) -> RunMeta:
    run = RunInfo(anvil, "0.3.36", "2026-01-01T00:00:00Z", DataInfo(data, 4, "cases.jsonl"))
    infos = {m: MetricInfo(f"{m}-{definition}".ljust(64, "0")) for m in metrics}
    return RunMeta("judge", sha, infos, (run,))


def write(
    path: Path,
    scores: dict[str, float | None],
    *,
    metric: str = "Tone",
    docs: dict[str, str] | None = None,
    run: RunMeta | None = None,
    sha: str = SHA,
    threshold: float = 0.5,
) -> Path:
    """A results file: case id -> score (None: an error line), with its metadata line."""
    writer = ResultWriter(path)
    if run is not None:
        writer.write(run.to_line())
    for position, (case_id, score) in enumerate(scores.items()):
        result = MetricResult(
            metric,
            score,
            None if score is None else score >= threshold,
            threshold,
            reason=None if score is None else f"scored {score}",
            error="boom" if score is None else None,
        )
        doc = (docs or {}).get(case_id)
        line = ResultLine(position, case_id, result, "judge", sha, doc=doc)
        writer.write(line.to_dict())
    writer.close()
    return path


BASE = {"a": 0.9, "b": 0.8, "c": 0.6, "d": 0.2}
NEW = {"a": 0.7, "b": 0.3, "c": 0.4, "d": 0.6}  # b: 0.8 -> 0.3 and c flip to fail, d to pass


def pair(tmp_path: Path, base=BASE, new=NEW, **kw) -> tuple[Path, Path]:
    run = kw.pop("run", meta())
    return (
        write(tmp_path / "base.jsonl", base, run=run, **kw),
        write(tmp_path / "new.jsonl", new, run=run, **kw),
    )


def test_means_difference_pass_rates_and_flips_by_hand(tmp_path: Path):
    base, new = pair(tmp_path)
    c = compare_files(base, new)
    (m,) = c.metrics
    assert m.cases == 4
    assert m.base_mean == pytest.approx((0.9 + 0.8 + 0.6 + 0.2) / 4)  # 0.625
    assert m.new_mean == pytest.approx((0.7 + 0.3 + 0.4 + 0.6) / 4)  # 0.5
    assert m.difference.value == pytest.approx(-0.125)
    assert (m.base_pass_rate, m.new_pass_rate) == (0.75, 0.5)
    assert [f.case_id for f in m.to_fail] == ["b", "c"]  # the larger drop first
    assert [f.change for f in m.to_fail] == pytest.approx([-0.5, -0.2])
    assert [f.case_id for f in m.to_pass] == ["d"]
    assert m.to_fail[0].new_why == "scored 0.3" and m.resampled == "cases"
    low, high = m.difference.low, m.difference.high
    assert -0.5 <= low < -0.125 < high <= 0.4  # within the range of the 4 differences


def test_the_interval_resamples_documents_when_cases_name_one(tmp_path: Path):
    # differences -1, -1, -1 (document x) and 0 (document y)
    base = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5}
    new = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.5}
    docs = {"a": "x", "b": "x", "c": "x", "d": "y"}
    b, n = pair(tmp_path / "docs", base, new, docs=docs)
    (by_doc,) = compare_files(b, n).metrics
    # two documents drawn with replacement: xx (-1), xy or yx (-0.75), yy (0), each >= 25%
    assert by_doc.resampled == "documents" and by_doc.units == 2
    assert by_doc.difference.value == pytest.approx(-0.75)
    assert (by_doc.difference.low, by_doc.difference.high) == pytest.approx((-1.0, 0.0))
    b, n = pair(tmp_path / "cases", base, new)
    (by_case,) = compare_files(b, n).metrics
    # four cases drawn: the mean is -k/4 for k ~ Binomial(4, 3/4); P(k <= 1) = 5.1% > 2.5%
    # and P(k = 0) = 0.4% < 2.5%, so the upper bound is -0.25 and the lower -1
    assert by_case.resampled == "cases" and by_case.units == 4
    assert (by_case.difference.low, by_case.difference.high) == pytest.approx((-1.0, -0.25))


def test_a_constant_drop_has_a_point_interval_and_the_tolerance_is_strict(tmp_path: Path):
    base, new = pair(tmp_path, {k: 0.75 for k in "abcd"}, {k: 0.5 for k in "abcd"})
    (m,) = compare_files(base, new).metrics
    assert (m.difference.value, m.difference.low, m.difference.high) == (-0.25, -0.25, -0.25)
    assert compare_files(base, new, tolerance=0.2).failed
    assert not compare_files(base, new, tolerance=0.25).failed  # -0.25 is not below -0.25


def test_errors_are_left_out_of_the_means_and_a_pass_to_error_is_a_flip(tmp_path: Path):
    base, new = pair(tmp_path, {"a": 0.9, "b": 0.8}, {"a": None, "b": 0.9})
    (m,) = compare_files(base, new).metrics
    assert m.cases == 1 and m.new_errors == 1 and m.base_errors == 0
    assert m.difference.value == pytest.approx(0.1) and math.isnan(m.difference.low)
    assert [(f.case_id, f.new_status) for f in m.to_fail] == [("a", "error")]
    assert m.verdict(0.0) == "too few to tell"


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["compare", *args])
    return result.exit_code, result.stdout, result.stderr


def test_exit_codes(tmp_path: Path):
    base, new = pair(tmp_path)
    code, out, _ = run_cli(str(base), str(new))
    assert code == 0 and out.startswith("## anvil compare: pass")
    code, out, _ = run_cli(str(base), str(new), "--fail-on-flip")
    assert code == 1 and "2 cases flipped to fail (--fail-on-flip)" in out
    worse = {k: v - 0.25 for k, v in BASE.items()}
    low = write(tmp_path / "low.jsonl", worse, run=meta())
    code, out, _ = run_cli(str(base), str(low))
    assert code == 1 and out.startswith("## anvil compare: FAIL — Tone: -0.250")
    code, _, _ = run_cli(str(base), str(low), "--tolerance", "0.3")
    assert code == 0
    code, _, err = run_cli(str(base), str(tmp_path / "missing.jsonl"))
    assert code == 2 and err.startswith("Error: ") and "missing.jsonl" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_other_models_or_definitions_need_a_flag_and_are_reported(tmp_path: Path):
    base = write(tmp_path / "base.jsonl", BASE, run=meta())
    other = "b" * 64
    new = write(tmp_path / "new.jsonl", NEW, run=meta(sha=other), sha=other)
    code, _, err = run_cli(str(base), str(new))
    assert code == 2
    assert "judge model judge (sha256 aaaaaaaaaaaa) → judge (sha256 bbbbbbbbbbbb)" in err
    assert "--allow-model-change compares them anyway" in err
    code, out, _ = run_cli(str(base), str(new), "--allow-model-change")
    assert code == 0 and "### What differed" in out
    assert "(compared because of `--allow-model-change`)" in out
    redefined = write(tmp_path / "redefined.jsonl", NEW, run=meta(definition="2"))
    code, _, err = run_cli(str(base), str(redefined))
    assert code == 2 and "metric `Tone`: definition Tone-1000000" in err
    assert "--allow-metric-change" in err
    code, out, _ = run_cli(str(base), str(redefined), "--allow-metric-change")
    assert code == 0 and "metric `Tone`: definition" in out


def test_pair_compares_a_renamed_metric(tmp_path: Path):
    base = write(tmp_path / "base.jsonl", BASE, run=meta())
    new = write(tmp_path / "new.jsonl", NEW, metric="Tone v2", run=meta(["Tone v2"]))
    code, _, err = run_cli(str(base), str(new))
    assert code == 2 and "no (case, metric) scored in both" in err and "--pair" in err
    code, out, _ = run_cli(str(base), str(new), "--pair", "Tone=Tone v2")
    assert code == 0 and "| Tone → Tone v2 | 4 |" in out
    assert "metric `Tone` → `Tone v2` (paired by --pair): definition" in out
    code, _, err = run_cli(str(base), str(new), "--pair", "Tonne=Tone v2")
    assert code == 2 and "has no metric 'Tonne'" in err
    code, _, err = run_cli(str(base), str(new), "--pair", "Tone")
    assert code == 2 and "--pair expects BASE_METRIC=NEW_METRIC" in err


def test_pair_within_one_file_compares_two_designs(tmp_path: Path):
    # one file holding both designs: NEW's own "Tone" must not stand in for "Tone v2"
    write(tmp_path / "tone.jsonl", BASE)
    write(tmp_path / "v2.jsonl", NEW, metric="Tone v2")
    both = tmp_path / "both.jsonl"
    both.write_text((tmp_path / "tone.jsonl").read_text() + (tmp_path / "v2.jsonl").read_text())
    (m,) = compare_files(both, both, renames={"Tone": "Tone v2"}).metrics
    assert m.cases == 4
    assert m.base_mean == pytest.approx(0.625) and m.new_mean == pytest.approx(0.5)


def test_what_else_differed_is_reported_never_refused(tmp_path: Path):
    base = write(tmp_path / "base.jsonl", BASE, run=meta())
    new = write(tmp_path / "new.jsonl", NEW, run=meta(data="e" * 64, anvil="0.2.0"))
    code, out, _ = run_cli(str(base), str(new))
    assert code == 0
    assert "- case data: 4 cases (sha256 dddddddddddd) → 4 cases (sha256 eeeeeeeeeeee)" in out
    assert "- anvil-local 0.1.0 → 0.2.0" in out


def test_files_without_metadata_still_compare(tmp_path: Path):
    base, new = pair(tmp_path, run=None)
    code, out, _ = run_cli(str(base), str(new))
    assert code == 0 and "has no metadata line" in out


def test_the_markdown_for_a_pull_request(tmp_path: Path):
    base, new = pair(tmp_path)
    text = markdown(compare_files(base, new, fail_on_flip=True))
    assert text.startswith("## anvil compare: FAIL — 2 cases flipped to fail (--fail-on-flip)")
    row = next(x for x in text.splitlines() if x.startswith("| Tone |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:4] == ["Tone", "4", "0.625", "0.500"]
    assert cells[4].startswith("-0.125 [")
    assert cells[5:] == ["75% → 50% (-25 pts)", "2", "1", "0 → 0", "**no clear change, flips**"]
    flips = text[text.index("### Flipped pass → fail") :]
    assert flips.index("| Tone | b | 0.800 pass | 0.300 fail | -0.500 | scored 0.3 |") < (
        flips.index("| Tone | c |")
    )
    assert "### Flipped fail → pass (1)" in text and "<details><summary>Run metadata" in text


def test_json_lists_every_figure(tmp_path: Path):
    base, new = pair(tmp_path)
    code, out, _ = run_cli(str(base), str(new), "--json")
    data = json.loads(out)
    assert code == 0 and data["failed"] is False
    (m,) = data["metrics"]
    assert m["difference"]["value"] == pytest.approx(-0.125) and m["verdict"] == "no clear change"
    assert [f["case_id"] for f in m["to_fail"]] == ["b", "c"]
    assert m["to_fail"][0]["base"] == {"status": "pass", "score": 0.8, "why": "scored 0.8"}


def test_without_scipy_the_command_says_which_extra(monkeypatch, tmp_path: Path):
    base, new = pair(tmp_path)
    monkeypatch.setitem(sys.modules, "scipy", None)  # import scipy now fails
    code, _, err = run_cli(str(base), str(new))
    assert code == 2 and err.startswith("Error: anvil compare needs the bench extra")


def test_nothing_in_common_is_bad_input(tmp_path: Path):
    base = write(tmp_path / "base.jsonl", {"a": 0.5}, run=meta())
    new = write(tmp_path / "new.jsonl", {"z": 0.5}, run=meta())
    with pytest.raises(DataError, match="no \\(case, metric\\) scored in both"):
        compare_files(base, new)


def test_the_ci_example_runs_real_commands():
    from tests.test_docs import _check_command

    workflow = Path(__file__).resolve().parent.parent / "examples" / "ci-matrix.yml"
    text = workflow.read_text().replace("\\\n", " ")
    lines = [x.strip() for x in text.splitlines() if x.strip().startswith("anvil ")]
    assert {x.split()[1] for x in lines} == {"eval", "merge", "compare", "view"}
    for line in lines:
        _check_command(line.split(" > ")[0].split(" || ")[0], "examples/ci-matrix.yml")
