"""Faults on the real model: `kill -9` at 20 random moments (--jobs 1 and 2), each followed by a
resume, ends with the same file as an uninterrupted run; two `anvil eval` processes share one
cache; a second process on the same --out is refused."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anvil_local.run.results import result_items

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
DATA = str(ROOT / "examples" / "summeval_sample.jsonl")
METRICS = [
    str(ROOT / "examples" / "geval" / f"{n}.toml")
    for n in ("coherence", "consistency", "fluency", "relevance")
]


def command(model: Path, out: Path, jobs: int, *extra: str) -> list[str]:
    cmd = [sys.executable, "-m", "anvil_local.cli", "eval", "--data", DATA, "--out", str(out)]
    for m in METRICS:
        cmd += ["--metric", m]
    return [*cmd, "--model", str(model), "--no-reason", "--jobs", str(jobs), *extra]


def content(path: Path) -> list[tuple]:
    """What must match between runs: each pair once, with its score and distribution."""
    rows = result_items(path)
    return sorted(
        (r["case_id"], r["metric"], r["score"], json.dumps(r["trace"], sort_keys=True))
        for r in rows
    )


def test_kill_9_at_random_moments_then_resume_gives_the_uninterrupted_result(
    tmp_path: Path, default_model_path: Path
):
    reference = tmp_path / "reference.jsonl"
    done = subprocess.run(
        command(default_model_path, reference, 1, "--no-cache"), capture_output=True, text=True
    )
    assert done.returncode in (0, 1), done.stderr
    expected = content(reference)
    assert len(expected) == 64

    out = tmp_path / "killed.jsonl"
    rng = random.Random(20261130)
    kills = 0
    for attempt in range(20):
        jobs = 1 + attempt % 2
        proc = subprocess.Popen(
            command(default_model_path, out, jobs, "--no-cache"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.5, 3.0))
        if proc.poll() is None:
            proc.kill()
            kills += 1
        proc.wait()
        for child in _orphans(proc.pid):
            os.kill(child, signal.SIGKILL)
    final = subprocess.run(
        command(default_model_path, out, 2, "--no-cache"), capture_output=True, text=True
    )
    assert final.returncode in (0, 1), final.stderr
    assert kills >= 10, f"only {kills} of 20 attempts were still running when killed"
    assert content(out) == expected  # every pair once, the same numbers
    print(f"fault injection: {kills} of 20 attempts killed mid-run, final file equal")


def _orphans(parent: int) -> list[int]:
    """Worker processes left behind by a killed parent (they stop on their own, but not at
    once: kill them so the next attempt has the cores)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text().split()
        except OSError:
            continue
        if b"multiprocessing" in cmdline and stat[3] in ("1", str(parent)):
            found.append(int(entry.name))
    return found


def test_two_processes_share_one_cache(tmp_path: Path, default_model_path: Path):
    env = {**os.environ, "ANVIL_CACHE_DIR": str(tmp_path / "shared-cache")}
    outs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    procs = [
        subprocess.Popen(
            command(default_model_path, out, 1), env=env, stderr=subprocess.PIPE, text=True
        )
        for out in outs
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode in (0, 1), err
        assert "Traceback" not in err
    assert content(outs[0]) == content(outs[1])
    third = subprocess.run(
        command(default_model_path, tmp_path / "c.jsonl", 1),
        env=env,
        capture_output=True,
        text=True,
    )
    assert "0 judged, 64 from cache" in third.stderr  # everything the two wrote is there


def test_a_second_process_on_the_same_out_is_refused(tmp_path: Path, default_model_path: Path):
    out = tmp_path / "r.jsonl"
    first = subprocess.Popen(
        command(default_model_path, out, 1, "--no-cache"), stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while not (out.with_name("r.jsonl.lock")).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        second = subprocess.run(command(default_model_path, out, 1), capture_output=True, text=True)
        assert second.returncode == 2
        (line,) = second.stderr.strip().splitlines()
        assert "is being written by another anvil eval (pid" in line
    finally:
        first.kill()
        first.wait()
