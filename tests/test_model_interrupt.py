"""Every process a run starts ends with it: `anvil eval --jobs 2` and `anvil bench --jobs 2`
sent SIGTERM, SIGINT or SIGKILL mid-run leave no process behind within 3 s (the workers and
multiprocessing's resource tracker included, found by an environment variable every process
of the run inherits), exit 143 / 130 / killed, and a re-run resumes with every pair exactly
once. `anvil eval --executor ray --jobs 2` too, its local Ray's processes (ended by the run's
watch, reaper.py) included. On the real default model, with short pairs (the headings DAG) so
a pair in flight finishes inside the grace period."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from anvil_local.run.results import result_items

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
HEADINGS = str(ROOT / "examples" / "headings_llm.toml")
VARIANTS = [
    "Intro\nWe met.\n\nBody\nPlans.\n\nConclusion\nShip.",
    "Intro\nWe met.\n\nConclusion\nShip.",
    "Body\nPlans.\n\nIntro\nWe met.\n\nConclusion\nDone.",
    "We met and planned.",
]
CASES = 24
MARKER = "ANVIL_TEST_RUN"
#: Where 3 s is not the bound: a local Ray stopped by SIGTERM first shuts itself down
#: cleanly (`ray.shutdown()`, 1.6 s of the 2.7 s measured on a 2-core VM), which a slower
#: host can stretch past 3 s. Killed, it has the 3 s of the rest.
BOUND = {("eval-ray", signal.SIGTERM): 6.0}


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    """24 cases with 24 inputs: 24 prompt-prefix groups, so both workers have work."""
    path = tmp_path / "cases.jsonl"
    rows = [
        {
            "id": f"m{i}",
            "input": f"Notes of planning meeting number {i}.",
            "actual_output": VARIANTS[i % 4],
            "labels": {"ok": int(i % 4 == 0)},
        }
        for i in range(CASES)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run_processes(marker: str) -> list[int]:
    """Every live process that carries the run's marker (the run's, its workers', the
    resource tracker's: each inherits the environment), re-parented to PID 1 or not."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"{MARKER}={marker}".encode() in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def describe(pids: list[int]) -> list[str]:
    """Each process as `pid state cmdline`, and whether it carries the run's own mark (what
    the run's watch ends), for a failure to name what was left."""
    out = []
    for pid in pids:
        try:
            entry = Path(f"/proc/{pid}")
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            mark = b"ANVIL_RUN_MARK=" in (entry / "environ").read_bytes()
        except OSError:
            out.append(f"{pid} (gone)")
            continue
        out.append(f"{pid} {state} {'marked' if mark else 'unmarked'} {cmd[:120]}")
    return out


def complete_lines(path: Path) -> int:
    return max(0, path.read_text().count("\n") - 1) if path.exists() else 0


def command(kind: str, cases: Path, out: Path, default_model_path: Path) -> list[str]:
    common = ["--jobs", "2", "--no-cache", "--model", str(default_model_path)]
    if kind == "eval-ray":  # two Ray actors on a local Ray started for the run
        return [sys.executable, "-m", "anvil_local.cli", "eval", "--metric", HEADINGS,
                "--data", str(cases), "--out", str(out), "--executor", "ray", *common]  # fmt: skip
    if kind == "eval":
        return [sys.executable, "-m", "anvil_local.cli", "eval", "--metric", HEADINGS,
                "--data", str(cases), "--out", str(out), *common]  # fmt: skip
    return [sys.executable, "-m", "anvil_local.cli", "bench", "--metric", HEADINGS,
            "--data", str(cases), "--label", "labels.ok", "--report", str(out.parent), *common]  # fmt: skip


def results_file(kind: str, tmp_path: Path) -> Path:
    return tmp_path / (
        "r.jsonl" if kind.startswith("eval") else "results-SmolLM2-135M-Instruct.Q4_1.gguf.jsonl"
    )


@pytest.mark.parametrize(
    ("kind", "sig"),
    [
        *(
            (kind, sig)
            for kind in ("eval", "bench")
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL)
        ),
        ("eval-ray", signal.SIGTERM),
        ("eval-ray", signal.SIGKILL),
    ],
    ids=lambda v: v.name if isinstance(v, signal.Signals) else v,
)
def test_a_signal_mid_run_leaves_no_process_and_a_resume_completes(
    kind, sig, cases, tmp_path, default_model_path
):
    marker = uuid.uuid4().hex
    out = results_file(kind, tmp_path)
    cmd = command(kind, cases, tmp_path / "r.jsonl", default_model_path)
    env = {**os.environ, MARKER: marker}
    env.pop("ANVIL_MODEL", None)
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    if kind == "eval-ray":
        pytest.importorskip("ray", reason="the [ray] extra is part of the test install")
    deadline = time.monotonic() + 240
    while complete_lines(out) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = [p for p in run_processes(marker) if p != proc.pid]
    assert len(workers) >= 2, "the run should have its workers (and resource tracker) by now"
    sent = time.monotonic()
    os.kill(proc.pid, sig)  # the parent only, as `timeout` and `kill PID` do
    limit = BOUND.get((kind, sig), 3.0)
    left = run_processes(marker)
    while left and time.monotonic() - sent < limit:
        time.sleep(0.05)
        left = run_processes(marker)
    waited = time.monotonic() - sent
    _, stderr = proc.communicate(timeout=60)
    print(
        f"\n| {kind} --jobs 2 | {sig.name} | {len(left)} left after {waited:.1f} s | exit {proc.returncode} |",
        end="",
    )
    assert left == [], (
        f"processes of the run still alive {limit:g} s after {sig.name}: {describe(left)}"
    )
    assert proc.returncode == {signal.SIGTERM: 143, signal.SIGINT: 130, signal.SIGKILL: -9}[sig], (
        stderr
    )
    if sig != signal.SIGKILL:  # Ray may log its own shutdown after the line
        lines = stderr.strip().splitlines()
        said = lines if kind == "eval-ray" else lines[-1:]
        assert any(line.startswith("Interrupted: ") for line in said), stderr
    kept = complete_lines(out)
    assert 4 <= kept < CASES
    resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode in (0, 1), resumed.stderr
    pairs = [(x["case_id"], x["metric"]) for x in result_items(out)]
    assert len(pairs) == CASES == len(set(pairs)), "every pair exactly once after the resume"
    print(f" {kept} kept, {len(pairs)} after resume |", end="")


def test_jobs_are_clamped_to_the_memory_and_a_run_that_fits_no_worker_says_so(
    cases, default_model_path, monkeypatch, caplog
):
    from anvil_local.errors import ModelError
    from anvil_local.judge.memory import worker_bytes
    from anvil_local.models.resolve import resolve_model
    from anvil_local.run.dataset import read_cases
    from anvil_local.run.evaluate import evaluate
    from anvil_local.spec import load_metrics

    need = worker_bytes(resolve_model(default_model_path))
    rows, metrics = read_cases(cases)[:6], load_metrics(HEADINGS)
    monkeypatch.setattr("anvil_local.judge.memory.available_bytes", lambda: need + need // 2)
    with caplog.at_level("WARNING"):
        outcome = evaluate(rows, metrics, model=default_model_path, jobs=2, use_cache=False)
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("--jobs 2"))
    print(f"\n{line}")
    assert line.startswith("--jobs 2: starting 1 worker process with ")
    assert (
        f"each needs about {need >> 20} MB (its model and context) and this machine has {(need + need // 2) >> 20} MB available"
        in line
    )
    assert len(outcome.lines) == 6 and all(x.result.error is None for x in outcome.lines)
    monkeypatch.setattr("anvil_local.judge.memory.available_bytes", lambda: need // 3)
    with pytest.raises(ModelError) as caught:
        evaluate(rows, metrics, model=default_model_path, jobs=2, use_cache=False)
    print(caught.value.one_line())
    assert caught.value.one_line() == (
        f"--jobs 2: not even one worker fits: each needs about {need >> 20} MB (its model and a "
        f"4096-token context) and this machine has {(need // 3) >> 20} MB available; free memory, "
        "or lower --n-ctx"
    )
