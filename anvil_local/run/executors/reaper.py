"""A watch that ends every process of a run once the run's main process is gone.

A local Ray started for a run spawns processes the run does not parent (Ray's agents,
started by its raylet) and that outlive a main process killed with SIGKILL. The main
process marks its environment with a run id before Ray starts, so every process Ray starts
inherits it; this watch, started beside it, waits on a pipe from the main process. When the
pipe closes (the run ended, or its process died, however) it ends every live process that
carries the mark: SIGTERM, then SIGKILL after half a second. Linux only (/proc); elsewhere it
does nothing. The actors, busy in the model's native code where SIGTERM waits, also watch
the run's process themselves (`exit_with`), so they end at once.

    python -m anvil_local.run.executors.reaper RUN_ID      # stdin: the pipe
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

#: The environment variable that marks a run's processes.
RUN_MARK = "ANVIL_RUN_MARK"
#: Seconds a process has after SIGTERM before SIGKILL; seconds the watch keeps trying.
GRACE = 0.5
LIMIT = 30.0


def marked(run_id: str, exclude: int) -> list[int]:
    """Live processes whose environment carries `run_id` (not `exclude`, not zombies)."""
    wanted = f"{RUN_MARK}={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == exclude:
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and wanted in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def reap(run_id: str, exclude: int, grace: float = GRACE, limit: float = LIMIT) -> list[int]:
    """End every process marked `run_id`: those alive at the first look get SIGTERM, then
    SIGKILL (again on each look) once they have had `grace` seconds; any that appears later
    (started meanwhile by one not yet ended: nothing of its own to save) gets SIGKILL at
    once. Until none is left or `limit` seconds pass; returns what is still alive then."""
    first = set(marked(run_id, exclude))
    for pid in first:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    start = time.monotonic()
    while True:
        time.sleep(0.05)
        pids = marked(run_id, exclude)
        waited = time.monotonic() - start
        if not pids or waited >= limit:
            return pids
        for pid in pids:
            if pid not in first or waited >= grace:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def exit_with(pid: int) -> None:
    """This process ends as soon as process `pid` is gone: a local Ray's actor watching the
    run that started it, since Ray (not the run) is its parent, so neither the parent-death
    signal nor a parent's pipe can tell it. A pidfd (Linux 5.3+) becomes readable when the
    process exits, whatever killed it; elsewhere this does nothing and the watch in `main`
    alone ends the actor."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):
        return

    def watch() -> None:
        select.select([fd], [], [])
        os._exit(1)

    threading.Thread(target=watch, name="run-watch", daemon=True).start()


class Reaper:
    """Marks this process's environment (so what starts after inherits it) and starts the
    watch; `close()` (or this process's death) lets it end what is left."""

    def __init__(self) -> None:
        self.run_id = uuid.uuid4().hex
        self._saved = os.environ.get(RUN_MARK)
        self.process: subprocess.Popen | None = None
        if not Path("/proc/self/environ").exists():
            return
        # the watch itself is not marked: it must outlive what it ends
        env = {k: v for k, v in os.environ.items() if k != RUN_MARK}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "anvil_local.run.executors.reaper", self.run_id],
            stdin=subprocess.PIPE,
            env=env,
            start_new_session=True,  # a Ctrl-C to the run's group does not end the watch early
        )
        os.environ[RUN_MARK] = self.run_id

    def close(self) -> None:
        if self._saved is None:
            os.environ.pop(RUN_MARK, None)
        else:
            os.environ[RUN_MARK] = self._saved
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()  # the watch reaps now
            try:
                self.process.wait(timeout=LIMIT)
            except subprocess.TimeoutExpired:
                self.process.kill()


def main() -> None:
    run_id = sys.argv[1]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdin.buffer.read()  # returns when the run's end of the pipe closes
    reap(run_id, os.getpid())


if __name__ == "__main__":
    main()
