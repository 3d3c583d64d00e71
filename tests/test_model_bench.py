"""`anvil bench` end to end on the real default model: through the runner (so a repeat costs
nothing), the tables, the report files, a shipped suite; and its input errors."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.run.results import result_items

ROOT = Path(__file__).resolve().parent.parent
SUMMEVAL = ROOT / "benchmarks" / "data" / "summeval.jsonl"


def small_summeval(tmp_path: Path, docs: int = 2, per_doc: int = 4) -> Path:
    chosen: dict[str, list[str]] = {}
    for line in SUMMEVAL.read_text().splitlines():
        doc = json.loads(line)["doc"]
        if doc not in chosen and len(chosen) == docs:
            break
        group = chosen.setdefault(doc, [])
        if len(group) < per_doc:
            group.append(line)
    path = tmp_path / "summeval-small.jsonl"  # named after its dataset: published figures show
    path.write_text("\n".join(x for g in chosen.values() for x in g) + "\n")
    return path


@pytest.mark.model
def test_bench_scores_through_the_runner_and_a_repeat_costs_nothing(
    tmp_path: Path, real_data_dir: Path
):
    data = small_summeval(tmp_path)
    args = [
        "bench",
        "--data",
        str(data),
        "--label",
        "labels.coherence",
        "--metric",
        str(ROOT / "examples" / "geval" / "coherence.toml"),
        "--metric",
        str(ROOT / "benchmarks" / "metrics" / "consistency_yes_no.toml"),
        "--no-progress",
    ]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "smollm2-135m-instruct: 16 judged, 0 from cache" in first.output
    row = next(
        x for x in first.output.splitlines() if x.startswith("| smollm2-135m-instruct | Coherence")
    )
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:5] == ["coherence", "8", "0"]
    assert "[" in cells[5]  # an estimate with its interval
    assert "Paired differences" in first.output and "G-Eval GPT-4" in first.output

    report = tmp_path / "report"
    second = CliRunner().invoke(main, [*args, "--report", str(report)])
    assert second.exit_code == 0, second.output
    assert "smollm2-135m-instruct: 0 judged, 16 from cache" in second.output
    # the same agreement table whether judged or read from the cache
    assert row in second.output
    saved = json.loads((report / "bench.json").read_text())
    assert saved["cases"] == 8 and saved["docs"] == 2 and len(saved["metrics"]) == 2
    assert (report / "report.html").stat().st_size > 10_000
    assert len(result_items(report / "results-default.jsonl")) == 16


@pytest.mark.model
def test_a_shipped_suite_runs(real_data_dir: Path):
    result = CliRunner().invoke(main, ["bench", "--suite", "qags_xsum", "--limit", "4"])
    assert result.exit_code == 0, result.output
    assert "bench qags_xsum: 4 cases, 4 documents" in result.output
    for name in ("Consistency", "Consistency yes/no", "Consistency DAG: invented, contradicted"):
        assert f"| smollm2-135m-instruct | {name} | consistent | 4 |" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --suite NAME, or --data FILE --label labels.NAME --metric FILE"),
        (
            ["--suite", "nope"],
            "no suite named 'nope'; known suites: qags_xsum, qags_xsum_fewshot_calibration, ",
        ),
        (
            ["--suite", "summeval", "--metric", "x.toml"],
            "--suite brings its own metrics and labels",
        ),
        (
            [
                "--data",
                str(SUMMEVAL),
                "--label",
                "labels.missing",
                "--limit",
                "3",
                "--metric",
                str(ROOT / "examples" / "geval" / "coherence.toml"),
            ],
            "has no numeric label 'missing'",
        ),
        (
            ["--suite", "summeval", "--docs", "2", "--limit", "3"],
            "give --docs or --limit, not both",
        ),
    ],
)
def test_bench_input_errors_are_one_line(args, message):
    result = CliRunner().invoke(main, ["bench", *args])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: ") and message in line
