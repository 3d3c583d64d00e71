"""Where a run's time goes: llama.cpp, the grammar library, anvil's own Python, the rest.

    python benchmarks/profile_run.py [--articles 1] [--model smollm2-135m-instruct]

Each workload runs once unprofiled (its wall time) and once under cProfile, both on an empty
KV cache with no result cache and no reasons. The profile's own time per function (tottime)
is summed by where the function lives. A ctypes call into llama.cpp is not a profiled call,
so its time lands in the llama_cpp wrapper that made it: the "llama.cpp" share is the native
decode plus llama-cpp-python's thin Python layer. cProfile slows Python code (not native
code), so the Python shares are upper bounds.
"""

from __future__ import annotations

import cProfile
import pstats

from common import Timer, fresh_cache, parser, speed_workloads

from anvil_local import evaluate
from anvil_local.judge import get_judge

GROUPS = (
    ("llama.cpp (native decode + llama_cpp wrappers)", ("/llama_cpp/",)),
    ("grammar (outlines, llguidance)", ("/outlines", "/llguidance", "outlines_core")),
    ("anvil-local Python", ("/anvil_local/",)),
    ("numpy", ("/numpy/",)),
)


def category(filename: str, function: str) -> str:
    for label, marks in GROUPS:
        if any(mark in filename for mark in marks):
            return label
    if filename == "~":  # a C built-in: numpy's ufuncs and methods name themselves
        return "numpy" if "numpy" in function else "Python built-ins (C)"
    return "other Python (stdlib: json, sqlite3, logging, ...)"


def run(judge, cases, metrics, profile: cProfile.Profile | None = None) -> float:
    judge.runtime._tokens, judge.runtime._exact = [], 0
    with fresh_cache(), Timer() as t:
        if profile is not None:
            profile.enable()
        evaluate(cases, metrics, model=judge, use_cache=False, include_reason=False)
        if profile is not None:
            profile.disable()
    return t.seconds


def shares(profile: cProfile.Profile) -> dict[str, float]:
    stats = pstats.Stats(profile)
    totals: dict[str, float] = {}
    for (filename, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        label = category(filename, function)
        totals[label] = totals.get(label, 0.0) + row[2]
    return totals


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--articles", type=int, default=1)
    args = p.parse_args()
    judge = get_judge(args.model)
    workloads = speed_workloads(args.data, args.articles)
    print(f"model {judge.model.name}, {judge.model.settings.resolved_threads()} threads")
    for label, cases, metrics in workloads:
        run(judge, cases[:2], metrics)  # load grammars and steps outside the timed runs
        wall = run(judge, cases, metrics)
        profile = cProfile.Profile()
        profiled = run(judge, cases, metrics, profile)
        totals = shares(profile)
        total = sum(totals.values())
        print(
            f"\n{label}: {len(cases)} cases, {wall / len(cases):.2f} s/case unprofiled, "
            f"{profiled / len(cases):.2f} s/case profiled\n"
        )
        print("| where | seconds | share |")
        print("|---|---|---|")
        for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
            print(f"| {name} | {seconds:.2f} | {seconds / total:.1%} |")
        outside = total - totals.get(GROUPS[0][0], 0.0)
        print(f"| everything outside llama.cpp | {outside:.2f} | {outside / total:.1%} |")


if __name__ == "__main__":
    main()
