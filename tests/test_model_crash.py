"""A worker that dies from a signal mid-run (real model, real processes): named as a crash
with its cause, the pair it was judging an error line, the rest of the run judged (its other
pairs by a fresh worker), exit code 3, JUnit written, and a re-run tries the error pair again."""

import multiprocessing
import os
import signal
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import EXIT_CRASHED, main
from anvil_local.run.results import result_items

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent


def _kill_a_worker_after_the_first_result(out: Path, killed: list[int]) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if out.exists() and out.read_text().count("\n") >= 1:
            workers = [p for p in multiprocessing.active_children() if p.is_alive()]
            if workers:
                os.kill(workers[0].pid, signal.SIGILL)
                killed.append(workers[0].pid)
                return
        time.sleep(0.02)


def test_a_worker_killed_by_sigill_is_reported_and_the_run_resumes(
    tmp_path: Path, default_model_path: Path
):
    out, junit = tmp_path / "r.jsonl", tmp_path / "r.xml"
    args = [
        "eval",
        "--metric",
        str(ROOT / "examples" / "headings_llm.toml"),
        "--metric",
        str(ROOT / "examples" / "headings.toml"),
        "--data",
        str(ROOT / "examples" / "meeting_summaries.jsonl"),
        "--model",
        str(default_model_path),
        "--no-cache",
        "--no-reason",
        "--out",
        str(out),
        "--junit",
        str(junit),
    ]
    killed: list[int] = []
    killer = threading.Thread(target=_kill_a_worker_after_the_first_result, args=(out, killed))
    killer.start()
    result = CliRunner().invoke(main, [*args, "--jobs", "2"])
    killer.join()
    assert killed, "no worker was running to kill"
    assert result.exit_code == EXIT_CRASHED == 3, result.output
    errors = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert len(errors) == 1
    assert f"(pid {killed[0]}) crashed with SIGILL (illegal instruction)" in errors[0]
    assert "a CPU instruction this machine cannot run" in errors[0]
    assert "fresh worker" in errors[0]
    assert "Traceback" not in result.output
    written = result_items(out)
    pairs = [(x["case_id"], x["metric"]) for x in written]
    assert len(pairs) == 8 == len(set(pairs))  # every pair judged once, none lost
    crashed = [x for x in written if x["error"]]
    assert len(crashed) <= 1  # the pair it was judging, if it was judging one
    for line in crashed:
        assert "crashed with SIGILL" in line["error"]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "8" and suite.get("errors") == str(len(crashed))

    resumed = CliRunner().invoke(main, [*args, "--jobs", "1"])
    assert resumed.exit_code in (0, 1), resumed.output
    assert f"{8 - len(crashed)} resumed" in resumed.output  # the error pair is tried again
    pairs = [(x["case_id"], x["metric"]) for x in result_items(out)]
    assert len(pairs) == 8 == len(set(pairs))
    assert not any(x["error"] for x in result_items(out))


def _kill_the_first_worker_at_once(killed: list[int]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        workers = [p for p in multiprocessing.active_children() if p.is_alive()]
        if workers:
            os.kill(workers[0].pid, signal.SIGKILL)
            killed.append(workers[0].pid)
            return
        time.sleep(0.005)


def test_a_worker_killed_before_it_takes_work_is_replaced(tmp_path: Path, default_model_path: Path):
    out = tmp_path / "r.jsonl"
    args = [
        "eval",
        *("--metric", str(ROOT / "examples" / "headings_llm.toml")),
        *("--metric", str(ROOT / "examples" / "headings.toml")),
        *("--data", str(ROOT / "examples" / "meeting_summaries.jsonl")),
        *("--model", str(default_model_path)),
        *("--no-cache", "--no-reason", "--jobs", "2", "--out", str(out)),
    ]
    killed: list[int] = []
    killer = threading.Thread(target=_kill_the_first_worker_at_once, args=(killed,))
    killer.start()
    result = CliRunner().invoke(main, args)
    killer.join()
    assert killed, "no worker was started"
    assert result.exit_code == EXIT_CRASHED, result.output
    assert "SIGKILL" in result.output and "out of memory" in result.output
    written = result_items(out)
    pairs = [(x["case_id"], x["metric"]) for x in written]
    assert len(pairs) == 8 == len(set(pairs))  # nothing lost, nothing twice
