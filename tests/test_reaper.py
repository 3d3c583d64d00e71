"""The reaper's two guards, without Ray: the watch ends marked processes (SIGKILL for those
that ignore SIGTERM, and any that appear meanwhile), and `exit_with` ends a process once the
one it watches is gone. Linux only, as they are."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from anvil_local.run.executors.reaper import RUN_MARK, marked, reap

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")

IGNORES_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
# starts a second marked process only after the first SIGTERM reached it
SPAWNS_ON_TERM = (
    "import signal, subprocess, sys, time\n"
    "def late(*_):\n"
    "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "signal.signal(signal.SIGTERM, late)\n"
    "time.sleep(60)\n"
)


def start(code: str, run_id: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], env={**os.environ, RUN_MARK: run_id})


def wait_marked(run_id: str, count: int) -> list[int]:
    deadline = time.monotonic() + 10
    while len(found := marked(run_id, os.getpid())) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


def test_the_watch_ends_a_process_that_ignores_sigterm_and_one_started_meanwhile():
    run_id = uuid.uuid4().hex
    stubborn, spawner = start(IGNORES_TERM, run_id), start(SPAWNS_ON_TERM, run_id)
    time.sleep(0.5)  # both have set their handlers
    assert sorted(wait_marked(run_id, 2)) == sorted([stubborn.pid, spawner.pid])
    left = reap(run_id, os.getpid(), grace=0.3, limit=10)
    assert left == []
    assert stubborn.wait(5) == -signal.SIGKILL and spawner.wait(5) == -signal.SIGKILL
    assert marked(run_id, os.getpid()) == []  # the late child ended too


def test_the_watch_gives_up_at_its_limit_and_says_what_is_left():
    run_id = uuid.uuid4().hex
    proc = start(IGNORES_TERM, run_id)
    time.sleep(0.5)
    assert reap(run_id, os.getpid(), grace=5, limit=0.3) == [proc.pid]  # no SIGKILL yet
    proc.kill()
    proc.wait(5)


def test_a_process_watching_another_ends_when_it_dies_however_killed():
    watched = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    code = (
        "import sys, time\n"
        "from anvil_local.run.executors.reaper import exit_with\n"
        f"exit_with({watched.pid})\n"
        "print('watching', flush=True)\n"
        "time.sleep(60)\n"
    )
    watcher = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert watcher.stdout.readline().strip() == "watching"
    assert watcher.poll() is None
    watched.kill()
    watched.wait(5)
    assert watcher.wait(5) == 1


def test_a_process_asked_to_watch_one_already_gone_ends_at_once():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(5)
    code = (
        "from anvil_local.run.executors.reaper import exit_with\n"
        f"exit_with({gone.pid})\n"
        "import time; time.sleep(60)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=20).returncode == 1
