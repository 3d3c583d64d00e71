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


def test_a_ported_rag_test_file_runs_under_pytest_on_the_default_judge(real_data_dir, tmp_path):
    """examples/porting/test_rag.py: DeepEval's RAG metrics in a pytest file, imports changed."""
    env = {**os.environ, "ANVIL_MODEL": "smollm2-135m-instruct"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
            str(PORTS / "test_rag.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "5 passed" in done.stdout
    scores = {}
    for line in done.stdout.splitlines():
        for name in ("Answer Relevancy", "Faithfulness", "Contextual Precision"):
            if f"{name}: " in line:
                scores[name] = float(line.split(f"{name}: ", 1)[1].split()[0])
    assert set(scores) == {"Answer Relevancy", "Faithfulness", "Contextual Precision"}
    assert scores["Faithfulness"] == 1.0  # the trained adapter backs the refund claim
