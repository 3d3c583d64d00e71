"""`anvil serve` started as a subprocess for the tests: on a free loopback port, read from
its ready line, with the default model's data dir, and stopped by the test."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from anvil_local.paths import CACHE_DIR_ENV, DATA_DIR_ENV

KEY = "test-key-7f3a"


class Server:
    """A running `anvil serve` subprocess: its URL, its process, what it printed."""

    def __init__(self, tmp: Path, data_dir: Path, *models: str, args: tuple[str, ...] = ()) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("ANVIL_MODEL", "ANVIL_API_KEY")}
        env[CACHE_DIR_ENV] = str(tmp / "cache")
        env[DATA_DIR_ENV] = str(data_dir)  # where the default model was pulled
        chosen = [a for m in models for a in ("--model", m)]
        cmd = [sys.executable, "-m", "anvil_local.cli", "serve", *chosen, "--port", "0"]
        tmp.mkdir(parents=True, exist_ok=True)
        self.stderr = open(tmp / "serve.err", "w+")  # noqa: SIM115 - read after it stops
        self.proc = subprocess.Popen(
            [*cmd, "--api-key", KEY, *args],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the ready line (or nothing, if it died)
        found = re.search(r"ready at (http://\S+) \(", line)
        assert found, f"no ready line: {line!r} {self.errors()}"
        self.ready_line = line.strip()
        self.url = found.group(1)

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=60)
