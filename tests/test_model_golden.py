"""Golden numbers: the default model's option distributions and verdicts on a few fixed cases.

A change that moves these numbers (a prompt, a template, the runtime) fails here until the
golden file and the cache version are updated together, so a stale cache can never serve
results the code would no longer give. Distributions may differ slightly between CPU
instruction sets (AVX2, AVX-512 kernels round differently): each probability is held to
TOLERANCE; verdicts are exact.

Regenerate after a deliberate change (and bump CACHE_VERSION in anvil_local/cache.py):
    python tests/test_model_golden.py --update
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from anvil_local.models.resolve import resolve_model

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "smollm2-135m-instruct.json"
TOLERANCE = 0.01  # absolute, per probability

QUESTION_BLOCKS = (
    "Input:\nThe council approved the new bus lane on Main Street after a two-hour debate.\n\n",
    "Actual Output:\nThe council approved a bus lane on Main Street.\n\n",
)


def compute(judge) -> dict:
    """Every number the golden file holds, computed now."""
    from anvil_local import load_metric
    from anvil_local.cache import CACHE_VERSION
    from anvil_local.judge import HEADER, Prompt
    from anvil_local.run.dataset import read_cases

    out: dict = {"cache_version": CACHE_VERSION, "choices": {}, "metrics": {}}
    prompt = Prompt((HEADER, *QUESTION_BLOCKS), "Is the actual output faithful to the input?")
    for name, options in {
        "yes-no": ["Yes", "No"],
        "shared-prefix": ["Yes", "Yes, partly", "No"],
        "score-0-10": [str(v) for v in range(11)],
    }.items():
        result = judge.choose(prompt, options)
        out["choices"][name] = {"verdict": result.choice, "distribution": result.distribution()}
    geval = load_metric(ROOT / "examples" / "geval" / "coherence.toml")
    for row in read_cases(ROOT / "examples" / "summeval_sample.jsonl")[:2]:
        result = geval.run(row.case, judge, include_reason=False)
        out["metrics"][f"coherence/{row.case_id}"] = {
            "verdict": result.trace.to_dict()["most_likely"],
            "distribution": result.trace.to_dict()["distribution"],
        }
    dag = load_metric(ROOT / "benchmarks" / "metrics" / "consistency_dag_facts.toml")
    for row in read_cases(ROOT / "examples" / "summeval_sample.jsonl")[:3]:
        result = dag.run(row.case, judge, include_reason=False)
        for step in result.trace.to_dict()["path"]:
            key = f"consistency-dag/{row.case_id}/{step['node']}"
            if "probabilities" in step:
                out["metrics"][key] = {
                    "verdict": step["verdict"],
                    "distribution": step["probabilities"],
                }

    return out


@pytest.mark.model
def test_the_default_model_gives_the_golden_numbers(judge):
    from anvil_local.cache import CACHE_VERSION

    golden = json.loads(GOLDEN.read_text())
    assert golden["cache_version"] == CACHE_VERSION, (
        "CACHE_VERSION changed: regenerate the golden file with the new numbers"
    )
    now = compute(judge)
    for section in ("choices", "metrics"):
        assert set(now[section]) == set(golden[section])
        for key, want in golden[section].items():
            got = now[section][key]
            assert got["verdict"] == want["verdict"], key
            assert list(got["distribution"]) == list(want["distribution"]), key
            for option, p in want["distribution"].items():
                assert got["distribution"][option] == pytest.approx(p, abs=TOLERANCE), (
                    f"{key} {option}: the numbers moved; if on purpose, bump CACHE_VERSION "
                    "and regenerate the golden file"
                )


def _update() -> None:
    from anvil_local.judge import Judge
    from anvil_local.models.store import ensure_model

    numbers = compute(Judge.load(resolve_model(ensure_model())))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(numbers, indent=2, sort_keys=False) + "\n")
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit(__doc__)
    _update()
