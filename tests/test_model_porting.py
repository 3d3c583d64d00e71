"""DeepEval's documented examples, ported by their imports alone, run on the default judge."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PORTS = Path(__file__).parent.parent / "examples" / "porting"


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("geval_custom_template", ["Correctness: ", "Correctness: "]),
        ("dag", ["Format Correctness: "]),
        ("conversational_geval", ["Professionalism: "]),
    ],
)
def test_a_ported_example_runs_on_the_default_judge(name, lines, real_data_dir):
    env = {**os.environ, "ANVIL_MODEL": "smollm2-135m-instruct"}
    done = subprocess.run(
        [sys.executable, str(PORTS / f"{name}.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scored = [line for line in done.stdout.splitlines() if ": " in line]
    for prefix in lines:
        line = next(x for x in scored if x.startswith(prefix))
        scored.remove(line)
        score = float(line.removeprefix(prefix).split()[0])
        assert 0.0 <= score <= 1.0
