"""A newcomer's first run, twice: the README's main job in a fresh data directory (no host
profile yet, the shipped Q4_1 file already there), once on the machine as it is and once with
CPU-bound processes beside it. The first run without --model tunes; on a quiet host it must
record a choice, on a busy one it must record nothing (and run on the shipped file).

    python benchmarks/first_run_tuning.py [--hogs 2]

Each run is a separate `anvil eval` process with its own ANVIL_DATA_DIR and ANVIL_CACHE_DIR;
the model file is hard-linked (or copied) into it, so nothing is fetched. What the tuning
said is taken from the run's own log lines. Figures: benchmarks/results/first_run_tuning.json.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import ROOT, add_out, write_figures

from anvil_local.models.catalogue import default_entry
from anvil_local.models.cpu_load import CpuMeter
from anvil_local.models.store import ensure_model

JOB = ["--metric", "examples/headings.toml", "--data", "examples/meeting_summaries.jsonl"]


def _spin() -> None:
    while True:
        pass


def first_run(model: Path, hogs: int) -> dict[str, Any]:
    """One fresh first run of the main job; `hogs` CPU-bound processes run beside it."""
    with tempfile.TemporaryDirectory() as tmp:
        data, cache = Path(tmp) / "data", Path(tmp) / "cache"
        (data / "models").mkdir(parents=True)
        target = data / "models" / model.name
        try:
            os.link(model, target)
        except OSError:
            shutil.copy2(model, target)
        env = {**os.environ, "ANVIL_DATA_DIR": str(data), "ANVIL_CACHE_DIR": str(cache)}
        env.pop("ANVIL_MODEL", None)
        spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(hogs)]
        for s in spinners:
            s.start()
        meter = CpuMeter()
        meter.start()
        started = time.perf_counter()
        others = None
        try:
            done = subprocess.run(
                [sys.executable, "-m", "anvil_local.cli", "eval", *JOB, "--no-progress"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            # before the spinners are reaped: the run itself is subtracted, they are not
            others = meter.stop()
        finally:
            for s in spinners:
                s.terminate()
                s.join()
        seconds = time.perf_counter() - started
        hosts = list((data / "hosts").glob("*.json"))
        profile = json.loads(hosts[0].read_text()) if hosts else None
        said = [
            line.strip()
            for line in done.stderr.splitlines()
            if "tun" in line.lower() or "not recorded" in line or "busy" in line
        ]
        return {
            "exit": done.returncode,
            "seconds": round(seconds, 1),
            "others_cpu": others,
            "recorded": profile is not None and bool(profile.get("use")),
            "use": (
                f"{profile['use']}, {profile.get('threads')} threads"
                if profile and profile.get("use")
                else "-"
            ),
            "said": said,
        }


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument("--hogs", type=int, default=2, help="CPU-bound processes in the busy run")
    add_out(p)
    args = p.parse_args()
    model = ensure_model(default_entry())
    rows, notes = [], []
    for name, hogs in (("as it is", 0), (f"{args.hogs} CPU-bound processes beside it", args.hogs)):
        found = first_run(model, hogs)
        print(f"{name}: {found}", flush=True)
        share = found["others_cpu"]
        rows.append(
            [
                name,
                None if share is None else round(100 * share, 1),
                "recorded" if found["recorded"] else "nothing recorded",
                found["use"],
                found["exit"],
                found["seconds"],
            ]
        )
        notes += [f"{name}: {line}" for line in found["said"]]
    write_figures(
        args,
        "first_run_tuning",
        "The first run of the main job in a fresh data directory: what tuning records",
        ["host", "others' CPU %", "tuning", "judge recorded", "exit", "seconds"],
        rows,
        notes=notes,
    )


if __name__ == "__main__":
    main()
