"""Metrics judged on `anvil serve` (started as subprocesses on loopback ports) against the
same metrics judged in this process on the same file: equal to within 1e-6 (exactly, on
this build) on the README's headings DAGs, the four SummEval G-Eval files and a
conversational DAG, a G-Eval panel and answer relevancy, where a case's questions of one step
go in one request (one request a case); a run over two servers that lose one mid-run, then both, losing and
doubling nothing; each failure as one line; the Python API with `assert_test`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anvil_local import DAGMetric, GEval, LLMTestCase, assert_test, load_metric, remote_judge
from anvil_local.errors import JudgeRefused, RemoteJudgeError
from anvil_local.judge import Prompt
from anvil_local.run.dataset import read_cases
from anvil_local.run.evaluate import evaluate
from anvil_local.run.results import result_items
from anvil_local.spec import load_metrics
from tests.serving import KEY, Server

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
MODEL = "smollm2-135m-instruct"
HEADINGS = "smollm2-135m-headings"
MEETINGS = ROOT / "examples" / "meeting_summaries.jsonl"
SUMMEVAL = ROOT / "examples" / "summeval_sample.jsonl"
GEVAL = [
    ROOT / "examples" / "geval" / f"{n}.toml"
    for n in ("coherence", "consistency", "fluency", "relevance")
]

#: (what, metric files, the model the metric is judged by, case file, cases)
EQUALITY = [
    (
        "headings DAG, judge at every node",
        [ROOT / "examples" / "headings_llm.toml"],
        MODEL,
        MEETINGS,
        None,
    ),
    (
        "headings DAG, trained judge",
        [ROOT / "examples" / "small_judge" / "headings_trained.toml"],
        HEADINGS,
        MEETINGS,
        None,
    ),
    ("four SummEval G-Eval files", GEVAL, MODEL, SUMMEVAL, 4),
    (
        "the four as a G-Eval panel",
        [ROOT / "examples" / "geval" / "summeval_panel.toml"],
        MODEL,
        SUMMEVAL,
        4,
    ),
    (
        "conversational DAG",
        [ROOT / "examples" / "conversations" / "support_dag.toml"],
        MODEL,
        ROOT / "examples" / "conversations" / "support.jsonl",
        None,
    ),
    (
        "answer relevancy (a verdict a sentence)",
        [ROOT / "examples" / "rag" / "answer_relevancy.toml"],
        MODEL,
        ROOT / "examples" / "rag" / "shoes.jsonl",
        None,
    ),
]

#: Where every question of a case is asked at one step: one request a case.
BATCHED = {"the four as a G-Eval panel", "answer relevancy (a verdict a sentence)"}


@pytest.fixture(scope="module")
def server(default_model_path: Path, tmp_path_factory: pytest.TempPathFactory):
    running = Server(
        tmp_path_factory.mktemp("remote"), default_model_path.parent.parent, MODEL, HEADINGS
    )
    yield running
    running.stop()


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ANVIL_JUDGE_KEY", KEY)
    return KEY


def numbers(value: object) -> list[float]:
    """Every number in a result's score and trace, in order (times and token counts aside)."""
    if isinstance(value, dict):
        return [
            n
            for k, v in value.items()
            if k not in ("seconds", "usage", "tokens")
            for n in numbers(v)
        ]
    if isinstance(value, list):
        return [n for v in value for n in numbers(v)]
    return [float(value)] if isinstance(value, int | float) and not isinstance(value, bool) else []


def readings(outcome) -> dict[tuple[str, str], list[float]]:
    found = {}
    for line in outcome.lines:
        assert line.result.error is None, line.result.error
        found[(line.case_id, line.metric)] = [
            line.result.score,
            *numbers(line.result.to_dict()["trace"]),
        ]
    return found


def test_a_metric_judged_remotely_equals_in_process(server: Server, key, real_data_dir):
    table = [
        "| metric | cases | pairs | numbers compared | max abs difference | questions | requests |",
        "|---|---|---|---|---|---|---|",
    ]
    for what, files, model, data, limit in EQUALITY:
        metrics = [m for f in files for m in load_metrics(f)]
        rows = read_cases(data)[:limit]
        # no reasons: each is text of its own request, and the counts below are of questions
        here = evaluate(rows, metrics, model=model, use_cache=False, include_reason=False)
        there = evaluate(
            rows, metrics, model=f"{server.url}#{model}", use_cache=False, include_reason=False
        )
        local, remote = readings(here), readings(there)
        assert local.keys() == remote.keys()
        compared = [(a, b) for k in local for a, b in zip(local[k], remote[k], strict=True)]
        worst = max(abs(a - b) for a, b in compared)
        # in-process one call a question; remote one a request, a case's questions of one
        # step together (judge/rounds.py)
        questions, requests = here.usage.calls, there.usage.calls
        table.append(
            f"| {what} | {len(rows)} | {len(local)} | {len(compared)} | {worst:.1e} "
            f"| {questions} | {requests} |"
        )
        assert worst <= 1e-6, what
        if what in BATCHED:  # a case's questions that wait on no answer: one request
            assert requests == len(rows), what
        else:  # one question at a time (a DAG's walk; G-Eval files go metric by metric)
            assert requests == questions, what
        assert {line.model for line in there.lines} == {f"{model}@{server.url}"}
        assert {line.model_sha256 for line in there.lines} == {
            line.model_sha256 for line in here.lines
        }
    print("\n" + "\n".join(table))


def test_each_metric_is_judged_by_its_own_judge(real_data_dir, tmp_path: Path):
    """Beside a metric naming the headings adapter, the untrained DAG stays on the default
    judge (it used to take the adapter); each line names its judge."""
    metrics = load_metrics(ROOT / "examples" / "headings_llm.toml") + load_metrics(
        ROOT / "examples" / "small_judge" / "headings_trained.toml"
    )
    out = tmp_path / "mixed.jsonl"
    mixed = evaluate(read_cases(MEETINGS), metrics, use_cache=False, out=out)
    by_metric = {(line.metric, line.model) for line in mixed.lines}
    assert by_metric == {
        ("Summary headings (model)", MODEL),
        ("Summary headings (trained judge)", HEADINGS),
    }
    alone = evaluate(read_cases(MEETINGS), metrics[:1], use_cache=False)
    assert [x.result.score for x in alone.lines] == [
        x.result.score for x in mixed.lines if x.metric == metrics[0].name
    ]
    meta = json.loads(out.read_text().splitlines()[0])["meta"]
    assert meta["model"]["name"] == f"several judges: {MODEL}, {HEADINGS}"
    assert {n: i["judge"]["name"] for n, i in meta["metrics"].items()} == {
        m.name: j for m, j in zip(metrics, (MODEL, HEADINGS), strict=True)
    }


def eval_command(out: Path, *urls: str) -> list[str]:
    judged = [a for u in urls for a in ("--judge-url", u)]
    return [
        sys.executable, "-m", "anvil_local.cli", "eval",
        "--metric", str(GEVAL[0]), "--metric", str(GEVAL[2]), "--data", str(SUMMEVAL),
        *judged, "--no-cache", "--no-reason", "--out", str(out),
    ]  # fmt: skip


def cli_env(data_dir: Path, judge_key: str = KEY) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ANVIL_MODEL"}
    env["ANVIL_JUDGE_KEY"] = judge_key
    env["ANVIL_DATA_DIR"] = str(data_dir)
    return env


def complete_lines(path: Path) -> int:
    return max(0, path.read_text().count("\n") - 1) if path.exists() else 0


def run_until(
    cmd: list[str], env: dict, out: Path, lines: int, kill: list[Server]
) -> subprocess.CompletedProcess:
    """Start the run, SIGKILL the servers once `lines` results are written, finish it."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while complete_lines(out) < lines and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    for server in kill:
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait()
    stdout, stderr = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def pairs_of(path: Path) -> dict[tuple[str, str], float]:
    items = result_items(path)
    keys = [(x["case_id"], x["metric"]) for x in items]
    assert len(keys) == len(set(keys)), "a pair is in the file twice"
    return {(x["case_id"], x["metric"]): x["score"] for x in items}


def test_servers_killed_mid_run_lose_nothing_and_double_nothing(
    default_model_path: Path, tmp_path: Path
):
    data = default_model_path.parent.parent
    env = cli_env(data)
    one, two = Server(tmp_path / "one", data, MODEL), Server(tmp_path / "two", data, MODEL)
    try:
        # one of two servers dies: its groups move to the other, the run completes
        out = tmp_path / "one-lost.jsonl"
        done = run_until(eval_command(out, one.url, two.url), env, out, 4, [two])
        assert done.returncode in (0, 1), done.stderr
        reference = pairs_of(out)
        assert len(reference) == 32
        # both die: the run stops in one line, keeping what it wrote; a re-run resumes
        three = Server(tmp_path / "three", data, MODEL)
        out = tmp_path / "both-lost.jsonl"
        stopped = run_until(eval_command(out, one.url, three.url), env, out, 6, [one, three])
        assert stopped.returncode == 2, stopped.stderr
        last = stopped.stderr.strip().splitlines()[-1]
        assert (
            last.startswith("Error: decision server http://127.0.0.1:")
            and "pairs were not judged" in last
        )
        kept = len(pairs_of(out))
        assert 6 <= kept < 32
        four = Server(tmp_path / "four", data, MODEL)
        resumed = subprocess.run(
            eval_command(out, four.url), env=env, capture_output=True, text=True, timeout=300
        )
        assert resumed.returncode in (0, 1), resumed.stderr
        assert f"{kept} resumed" in resumed.stderr
        assert pairs_of(out) == reference  # every pair once, with the scores of the other run
        four.stop()
        print(f"\none of two killed: 32 pairs; both killed: {kept} kept, resumed to 32, equal")
    finally:
        for server in (one, two):
            if server.proc.poll() is None:
                server.stop()


def test_failures_are_one_line(server: Server, key, default_model_path: Path, tmp_path: Path):
    data = default_model_path.parent.parent
    base = [sys.executable, "-m", "anvil_local.cli", "eval", "--data", str(MEETINGS), "--no-cache"]
    headings = ["--metric", str(ROOT / "examples" / "headings_llm.toml")]
    cases = {
        "wrong key": (
            [*base, *headings, "--judge-url", server.url],
            cli_env(data, "wrong"),
            f"Error: server {server.url} refused the key (401 missing or wrong API key: send "
            "'Authorization: Bearer <key>'): set ANVIL_JUDGE_KEY",
        ),
        "no such model": (
            [*base, *headings, "--judge-url", server.url, "--judge-model", "gpt-4"],
            cli_env(data),
            f"Error: {server.url} does not serve model 'gpt-4'; it serves: {MODEL}, {HEADINGS}",
        ),
        "likelihoods": (
            [
                *base,
                "--metric",
                str(ROOT / "examples" / "small_judge" / "likelihood_contrast.toml"),
                "--judge-url",
                server.url,
            ],
            cli_env(data),
            "Error: likelihood readings cannot be asked through System One: this metric needs a "
            "local judge (--model NAME|PATH)",
        ),
        "both --model and --judge-url": (
            [*base, *headings, "--judge-url", server.url, "--model", MODEL],
            cli_env(data),
            "Error: give --model (a local judge) or --judge-url (a server), not both (see `",
        ),
    }
    table = ["| failure | exit | stderr |", "|---|---|---|"]
    for what, (cmd, env, line) in cases.items():
        done = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
        )
        table.append(f"| {what} | {done.returncode} | {done.stderr.strip()} |")
        assert done.returncode == 2, (what, done.stderr)
        assert done.stderr.strip() == line or (
            line.endswith("`") and done.stderr.startswith(line)
        ), what
    judge = remote_judge(server.url, MODEL)
    with pytest.raises(RemoteJudgeError) as caught:  # one pair's refusal, not the run's
        judge.choose(Prompt(("A case.\n\n",), "Which?"), [f"label {i}" for i in range(300)])
    assert not isinstance(caught.value, JudgeRefused)
    assert str(caught.value) == (
        f"server {server.url} refused the request: 422 question 'q': a choice question may "
        "have at most 255 labels on this server, got 300"
    )
    print("\n" + "\n".join(table))


def test_geval_and_dag_metrics_take_a_remote_judge_in_assert_test(
    server: Server, key, real_data_dir
):
    judge = remote_judge(server.url, model=MODEL)
    coherence = load_metric(GEVAL[0])
    geval = GEval(
        name="Coherence",
        criteria=coherence.criteria,
        evaluation_steps=coherence.evaluation_steps,
        evaluation_params=coherence.evaluation_params,
        rubric=coherence.rubric,
        threshold=0.0,
        include_reason=False,
        model=judge,
    )
    headings = load_metric(ROOT / "examples" / "headings_llm.toml")
    dag = DAGMetric(
        "Headings (remote)", headings.dag, threshold=0.0, include_reason=False, model=judge
    )
    row = json.loads(SUMMEVAL.read_text().splitlines()[0])
    case = LLMTestCase(input=row["input"], actual_output=row["actual_output"], id=row["id"])
    assert_test(case, [geval, dag])
    local_geval = GEval(
        name="Coherence",
        criteria=coherence.criteria,
        evaluation_steps=coherence.evaluation_steps,
        evaluation_params=coherence.evaluation_params,
        rubric=coherence.rubric,
        include_reason=False,
    )
    # the same metric in this process (the name is part of a G-Eval prompt: the same one)
    assert geval.measure(case) == pytest.approx(local_geval.measure(case, MODEL), abs=1e-9)
