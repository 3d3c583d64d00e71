"""`anvil eval` end to end on the real default model: exit codes, resume after a kill,
--jobs 2 equal to --jobs 1, JUnit, and the README's commands."""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.run.results import result_items

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
MEETINGS = str(ROOT / "examples" / "meeting_summaries.jsonl")
HEADINGS = str(ROOT / "examples" / "headings_llm.toml")
COHERENCE = str(ROOT / "examples" / "geval" / "coherence.toml")

FIXED_DAG = """type = "dag"
name = "Fixed"
[nodes.q]
type = "binary"
criteria = "Is there an Actual Output?"
evaluation_params = ["actual_output"]
verdicts = [{{ verdict = true, score = {score} }}, {{ verdict = false, score = {score} }}]
"""


def lines(path: Path) -> list[dict]:
    return result_items(path)  # the result lines, without the metadata line


def semantic(line: dict) -> tuple:
    steps = [
        {k: v for k, v in s.items() if k not in ("seconds", "tokens")}
        for s in line["trace"].get("path", [])
    ]
    return (
        line["case_id"],
        line["metric"],
        line["score"],
        line["success"],
        line["reason"],
        json.dumps({**line["trace"], "path": steps}, sort_keys=True),
    )


@pytest.mark.parametrize(("score", "code"), [(10, 0), (2, 1)])
def test_exit_code_follows_the_thresholds(tmp_path: Path, default_model_path: Path, score, code):
    metric = tmp_path / "fixed.toml"
    metric.write_text(FIXED_DAG.format(score=score))
    junit = tmp_path / "r.xml"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--metric",
            str(metric),
            "--data",
            MEETINGS,
            "--model",
            str(default_model_path),
            "--no-reason",
            "--out",
            str(tmp_path / "r.jsonl"),
            "--junit",
            str(junit),
            "--progress",
        ],
    )
    assert result.exit_code == code, result.output
    assert "judging 1/4 (25%)" in result.output and "judging 4/4 (100%)" in result.output
    assert "evaluated by llama.cpp for" in result.output
    assert len(lines(tmp_path / "r.jsonl")) == 4
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == ("0" if code == 0 else "4")


def test_a_killed_run_resumes_with_every_pair_exactly_once(tmp_path: Path, default_model_path):
    out = tmp_path / "r.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "anvil_local.cli",
        "eval",
        "--metric",
        COHERENCE,
        "--data",
        str(ROOT / "examples" / "summeval_sample.jsonl"),
        "--no-reason",
        "--no-cache",
        "--model",
        str(default_model_path),
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_text().count("\n") >= 3:  # the metadata line and 2
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = out.read_text().count("\n") - 1  # complete result lines
    assert 2 <= before < 16, "the run should have been killed part way"
    finished = subprocess.run(cmd, capture_output=True, text=True)
    assert finished.returncode in (0, 1), finished.stderr
    assert f"{before} resumed" in finished.stderr
    pairs = [(x["case_id"], x["metric"]) for x in lines(out)]
    assert len(pairs) == 16 == len(set(pairs))
    assert sorted(x["position"] for x in lines(out)) == list(range(16))


def test_two_jobs_give_the_same_results_as_one(tmp_path: Path, default_model_path: Path):
    results = {}
    for jobs in (1, 2):
        out = tmp_path / f"r{jobs}.jsonl"
        result = CliRunner().invoke(
            main,
            [
                "eval",
                "--metric",
                HEADINGS,
                "--data",
                MEETINGS,
                "--model",
                str(default_model_path),
                "--no-cache",
                "--jobs",
                str(jobs),
                "--out",
                str(out),
            ],
        )
        assert result.exit_code in (0, 1), result.output
        results[jobs] = sorted(semantic(x) for x in lines(out))
    assert len(results[1]) == 4
    assert results[1] == results[2]


def test_explain_prints_the_walk_with_probabilities(default_model_path: Path):
    result = CliRunner().invoke(
        main,
        [
            "explain",
            "--metric",
            HEADINGS,
            "--data",
            MEETINGS,
            "--id",
            "swapped",
            "--soft",
            "--model",
            str(default_model_path),
        ],
    )
    assert result.exit_code == 0, result.output
    for part in (
        "case swapped",
        "[extract] Summary headings:",
        "[headings] Do the summary",
        "expected score",
        "reason:",
    ):
        assert part in result.output
    # both answers listed with their probabilities, the judge's one starred (which one is
    # the model's business, not this test's)
    answers = re.findall(r"^ +(\*)? (Yes|No) +(0\.\d{3}|1\.000)", result.output, re.MULTILINE)
    assert sorted(a for _, a, _ in answers[:2]) == ["No", "Yes"]
    assert [star for star, _, _ in answers[:2]].count("*") == 1


def _readme_blocks(kind: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks, inside, current = [], False, []
    for line in text.splitlines():
        if line.startswith("```"):
            if inside:
                blocks.append("\n".join(current))
                inside, current = False, []
            elif line == f"```{kind}":
                inside = True
            continue
        if inside:
            current.append(line)
    return blocks


def test_readme_test_command_is_what_ci_runs():
    commands = [b for b in _readme_blocks("sh") if "pytest" in b]
    assert len(commands) == 1
    assert commands[0] in (ROOT / ".ci" / "run").read_text()


def test_readme_python_snippets_run(real_data_dir: Path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    geval, dag = _readme_blocks("python")  # the G-Eval tour, then the DAG one
    exec(compile(geval, "README.md", "exec"), {})
    out = capsys.readouterr().out
    score = float(out.splitlines()[0].split()[1])
    assert 0 < score < 1 and score not in (0.25, 0.5, 0.75)  # weighted, not an integer score
    assert "'1':" in out and "'5':" in out
    exec(compile(dag, "README.md", "exec"), {})
    out = capsys.readouterr().out  # verbose_mode's report
    found = re.search(r"^Summary headings: score (\d\.\d{3}) ", out, re.MULTILINE)
    assert found is not None and 0 <= float(found.group(1)) <= 1, out
    assert "Do the summary headings include all three" in out  # the walk reached it
    # both answers of the yes/no node listed with their probabilities, one starred
    answers = re.findall(r"^ +(\*)? (Yes|No) +(0\.\d{3}|1\.000)", out, re.MULTILINE)
    assert sorted(a for _, a, _ in answers[:2]) == ["No", "Yes"]
    assert [star for star, _, _ in answers[:2]].count("*") == 1


def test_readme_anvil_commands_run(real_data_dir: Path, tmp_path: Path, monkeypatch):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(ROOT / "benchmarks", tmp_path / "benchmarks")
    monkeypatch.chdir(tmp_path)
    commands = []
    for block in _readme_blocks("sh"):
        for command in block.replace("\\\n", " ").splitlines():
            tail = command.split("&&")[-1].strip()
            if tail.startswith("anvil "):
                commands.append(shlex.split(tail)[1:])
    assert len(commands) >= 3
    for args in commands:
        result = CliRunner().invoke(main, args)
        assert result.exit_code in (0, 1), (args, result.output)
    assert len(lines(tmp_path / "results.jsonl")) == 8  # 4 cases x the code and model DAGs
    assert os.path.getsize(tmp_path / "summeval.xml") > 0


def test_pytest_fixture_and_assert_test_gate_a_suite(pytester, default_model_path: Path):
    pytester.makepyfile(
        f"""
        from anvil_local import LLMTestCase, assert_test, load_metric

        CASE = LLMTestCase(input="Notes.", actual_output="Intro\\nHi\\nBody\\nX\\nConclusion\\nY")

        def test_passes(anvil_judge):
            metric = load_metric({str(ROOT / "examples" / "headings_llm.toml")!r})
            for node in metric.dag.order:
                if getattr(node, "score", None) is not None:
                    node.score = 10
            assert_test(CASE, [metric], model=anvil_judge)

        def test_fails(anvil_judge):
            metric = load_metric({str(ROOT / "examples" / "headings_llm.toml")!r})
            metric.threshold = 1.0
            for node in metric.dag.order:
                if getattr(node, "score", None) is not None:
                    node.score = 2
            assert_test(CASE, [metric], model=anvil_judge)
        """
    )
    result = pytester.runpytest_subprocess(f"--anvil-model={default_model_path}", "-q")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*Summary headings (model): score 0.200 < threshold 1.0*"])


def test_steps_command_prints_steps_to_pin(tmp_path: Path, default_model_path: Path):
    metric = tmp_path / "relevance.toml"
    metric.write_text(
        'type = "geval"\nname = "Relevance"\nevaluation_params = ["input", "actual_output"]\n'
        'criteria = "The summary keeps the important points of the source."\n'
    )
    result = CliRunner().invoke(
        main, ["steps", "--metric", str(metric), "--model", str(default_model_path)]
    )
    assert result.exit_code == 0, result.output
    pinned = metric.read_text() + result.output
    metric.write_text(pinned)
    from anvil_local.spec import load_metric

    steps = load_metric(metric).evaluation_steps
    assert 3 <= len(steps) <= 4 and all(steps)
