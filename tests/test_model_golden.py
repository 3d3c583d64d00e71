"""Golden numbers: the default model's option distributions and verdicts on a few fixed cases.

A change that moves these numbers (a prompt, a template, the runtime) fails here until the
golden files and the cache version are updated together, so a stale cache can never serve
results the code would no longer give.

llama.cpp's AVX2 and AVX-512 kernels round differently: the same build of the same model gave
probabilities up to 0.051 apart (no verdict moved), while hosts of one kernel family agreed
bit for bit. So there is a golden file per family (`golden/<model>.<family>.json`), each held
to TOLERANCE; a host of a family with no file of its own is held to every file with
CROSS_FAMILY_TOLERANCE. Verdicts are exact either way.

Regenerate after a deliberate change (and bump CACHE_VERSION in anvil_local/cache.py), on a
host of each family (an AVX2 build on any x86-64 host:
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF"):
    python tests/test_model_golden.py --update
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from anvil_local.judge.native import kernel_family
from anvil_local.models.resolve import resolve_model

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
MODEL = "smollm2-135m-instruct"
TOLERANCE = 0.01  # absolute, per probability, within a kernel family
CROSS_FAMILY_TOLERANCE = 0.08  # between families (0.051 measured, AVX2 against AVX-512)


def golden_files() -> dict[str, Path]:
    """The golden file of each kernel family, by family."""
    return {p.suffixes[-2].lstrip("."): p for p in sorted(GOLDEN_DIR.glob(f"{MODEL}.*.json"))}


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

    files = golden_files()
    assert {"avx2", "avx512"} <= set(files), files
    # a GPU (benchmarks/gpu_check.sh) is a kernel family of its own: held to every CPU file
    family = "gpu" if judge.model.settings.n_gpu_layers else kernel_family()
    held = {family: files[family]} if family in files else files
    tolerance = TOLERANCE if family in files else CROSS_FAMILY_TOLERANCE
    now = compute(judge)
    for name, path in held.items():
        golden = json.loads(path.read_text())
        assert golden["cache_version"] == CACHE_VERSION, (
            f"CACHE_VERSION changed: regenerate {path.name} with the new numbers"
        )
        compare(now, golden, tolerance, f"{family} host against the {name} file")


def test_the_families_agree_on_every_verdict_and_within_the_cross_family_tolerance():
    """The files themselves: the same keys and verdicts, the numbers within what a host of
    an unknown family is held to (so that bound is measured, not guessed)."""
    files = [json.loads(p.read_text()) for p in golden_files().values()]
    assert len(files) >= 2
    for other in files[1:]:
        assert other["cache_version"] == files[0]["cache_version"]
        compare(other, files[0], CROSS_FAMILY_TOLERANCE, "two kernel families")


def compare(now: dict, golden: dict, tolerance: float, what: str) -> None:
    for section in ("choices", "metrics"):
        assert set(now[section]) == set(golden[section]), what
        for key, want in golden[section].items():
            got = now[section][key]
            assert got["verdict"] == want["verdict"], f"{what}: {key}"
            assert list(got["distribution"]) == list(want["distribution"]), f"{what}: {key}"
            for option, p in want["distribution"].items():
                assert got["distribution"][option] == pytest.approx(p, abs=tolerance), (
                    f"{what}: {key} {option}: the numbers moved; if on purpose, bump "
                    "CACHE_VERSION and regenerate the golden files"
                )


def _update() -> None:
    from anvil_local.judge import Judge
    from anvil_local.models.store import ensure_model

    numbers = compute(Judge.load(resolve_model(ensure_model())))
    path = GOLDEN_DIR / f"{MODEL}.{kernel_family()}.json"
    GOLDEN_DIR.mkdir(exist_ok=True)
    path.write_text(json.dumps(numbers, indent=2, sort_keys=False) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit(__doc__)
    _update()
