"""Where a run's time goes: llama.cpp, the grammar library, anvil's own Python, the rest.

    python benchmarks/profile_run.py [--articles 1] [--model smollm2-135m-instruct]

Each workload runs once unprofiled (its wall time) and once under cProfile, both on an empty
KV cache with no result cache and no reasons. The profile's own time per function (tottime)
is summed by where the function lives. A ctypes call into llama.cpp is not a profiled call,
so its time lands in the llama_cpp wrapper that made it: the "llama.cpp" share is the native
decode plus llama-cpp-python's thin Python layer. cProfile slows Python code (not native
code), so the Python shares are upper bounds.

Figures: benchmarks/results/profile_run.json (one row per workload: the shares of the
profile's own time).
"""

from __future__ import annotations

import cProfile
import pstats

from harness import Timer, add_articles, fresh_cache, parser, speed_workloads, write_figures

from anvil_local import evaluate
from anvil_local.models import get_judge

GROUPS = (
    ("llama.cpp (native decode + llama_cpp wrappers)", ("/llama_cpp/",)),
    ("grammar (outlines, llguidance)", ("/outlines", "/llguidance", "outlines_core")),
    ("anvil-local Python", ("/anvil_local/",)),
    ("numpy", ("/numpy/",)),
)


# the README's columns: these groups alone, the rest as "everything else"
COLUMN_GROUPS = {
    "llama.cpp": GROUPS[0][0],
    "anvil-local Python": GROUPS[2][0],
    "numpy": GROUPS[3][0],
}
COLUMNS = [
    "workload",
    "cases",
    "s/case",
    *COLUMN_GROUPS,
    "everything else",
    "outside llama.cpp",
]


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
    add_articles(p, 1)
    args = p.parse_args()
    judge = get_judge(args.model)
    workloads = speed_workloads(args.data, args.articles)
    threads = judge.runtime.llama.n_threads
    print(f"model {judge.model.name}, {threads} threads")
    rows, notes = [], []
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
        share = {name: totals.get(name, 0.0) / total for name in COLUMN_GROUPS.values()}
        rest = 1.0 - sum(share.values())
        rows.append([label, len(cases), wall / len(cases), *share.values(), rest, outside / total])
        notes.append(f"{label}: {profiled / len(cases):.2f} s/case profiled")
    write_figures(
        args,
        "profile_run",
        "Where a run's time goes: shares of the profile's own time, by where the code lives",
        COLUMNS,
        rows,
        formats={"s/case": ".2f", **{c: ".1%" for c in COLUMNS[3:]}},
        units={"s/case": "s", **{c: "share of profiled time" for c in COLUMNS[3:]}},
        notes=notes,
        models=[judge],
        settings={"articles": args.articles, "threads": threads},
    )


if __name__ == "__main__":
    main()
