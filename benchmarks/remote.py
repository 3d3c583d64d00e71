"""Issue: metrics judged on `anvil serve` (a remote judge over loopback) against the same
metrics judged in this process, on the README's main job (the headings DAGs over the
example meeting summaries), on the four SummEval G-Eval files and on the four as a panel; and
one server against two on this host.

In-process and one server run with 2 threads each, in alternating rounds (the server idles
while this process judges, and the other way round); the two servers run with 1 thread each,
so both setups use the host's 2 cores. Seconds and tokens evaluated by llama.cpp are per case;
tokens over a server are what the server reports it evaluated.

    python benchmarks/remote.py [--model NAME|PATH] [--articles 2] [--rounds 2]

Figures: benchmarks/results/remote.json.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time

from harness import (
    GEVAL_NAMES,
    HEADINGS_LLM,
    ROOT,
    SHIPPED_MODEL,
    add_articles,
    add_rounds,
    meeting_cases,
    parser,
    summeval_cases,
    write_figures,
)

from anvil_local.judge.settings import JudgeSettings
from anvil_local.run.evaluate import evaluate
from anvil_local.spec import load_metrics

HEADINGS_CODE = ROOT / "examples" / "headings.toml"
GEVAL_DIR = ROOT / "examples" / "geval"


def start(model: str, threads: int) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "anvil_local.cli", "serve", "--model", model, "--port", "0"]
    proc = subprocess.Popen([*cmd, "--threads", str(threads)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    found = re.search(r"ready at (http://\S+) \(", proc.stdout.readline())
    if not found:
        proc.kill()
        raise SystemExit("the server did not start")
    return proc, found.group(1)


def run(cases: list, metrics: list, model: str) -> tuple[float, float, float]:
    """(seconds, tokens evaluated, calls) per case for one pass, nothing cached: calls are
    questions in-process, requests over a server."""
    start_time = time.perf_counter()
    settings = None if model.startswith("http") else JudgeSettings(threads=2)
    outcome = evaluate(cases, metrics, model=model, settings=settings, use_cache=False,
                       include_reason=False)  # fmt: skip
    seconds = time.perf_counter() - start_time
    errors = [line.result.error for line in outcome.lines if line.result.error]
    if errors:
        raise SystemExit(f"a pair failed: {errors[0]}")
    usage = outcome.usage
    return seconds / len(cases), usage.evaluated_tokens / len(cases), usage.calls / len(cases)


def main() -> None:
    p = parser(__doc__, model_default=SHIPPED_MODEL)
    add_articles(p, 2)
    add_rounds(p, 2, "alternating rounds of in-process and remote")
    args = p.parse_args()
    workloads = [
        (
            "README main job (headings DAGs)",
            meeting_cases(),
            load_metrics(HEADINGS_CODE) + load_metrics(HEADINGS_LLM),
        ),
        (
            "four SummEval G-Eval files",
            summeval_cases(args.data, articles=args.articles, per_article=8),
            [m for n in GEVAL_NAMES for m in load_metrics(GEVAL_DIR / f"{n}.toml")],
        ),
        (
            "the four as a G-Eval panel",
            summeval_cases(args.data, articles=args.articles, per_article=8),
            load_metrics(GEVAL_DIR / "summeval_panel.toml"),
        ),
    ]
    rows = []
    proc, url = start(args.model, 2)
    try:
        remote_spec = f"{url}#{args.model}"
        for judge in (args.model, remote_spec):  # load the model here, warm both the same way
            run(workloads[0][1][:1], workloads[0][2], judge)
        for name, cases, metrics in workloads:
            local, remote = [], []
            for _ in range(args.rounds):
                local.append(run(cases, metrics, args.model))
                remote.append(run(cases, metrics, remote_spec))
            ls, lt, lc = (statistics.median(x) for x in zip(*local, strict=True))
            rs, rt, rc = (statistics.median(x) for x in zip(*remote, strict=True))
            rows.append([name, len(cases), "in-process, 2 threads", ls, lt, lc, 1.0])
            rows.append(
                [name, len(cases), "anvil serve, 1 server x 2 threads", rs, rt, rc, rs / ls]
            )
            print(rows[-2], rows[-1], flush=True)
    finally:
        proc.terminate()
        proc.wait(60)
    servers = [start(args.model, 1) for _ in range(2)]
    try:
        spec = ",".join(u for _, u in servers) + f"#{args.model}"
        single = f"{servers[0][1]}#{args.model}"
        for name, cases, metrics in workloads:
            one = run(cases, metrics, single)
            two = run(cases, metrics, spec)
            rows.append([name, len(cases), "anvil serve, 1 server x 1 thread", *one, None])
            rows.append(
                [name, len(cases), "anvil serve, 2 servers x 1 thread", *two, two[0] / one[0]]
            )
            print(rows[-2], rows[-1], flush=True)
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(60)
    write_figures(
        args,
        "remote",
        "A remote judge (anvil serve on loopback) against in-process, and one server against two",
        ["workload", "cases", "judge", "s/case", "tokens/case", "calls/case", "x baseline"],
        rows,
        formats={"s/case": ".3f", "tokens/case": ".0f", "calls/case": ".2f", "x baseline": ".3f"},
        notes=[
            "x baseline: against in-process for the 2-thread rows (target <= 1.2x), against "
            "one 1-thread server for the two-server row",
            "calls/case: questions asked in-process, requests sent over a server (a case's "
            "questions of one step share a request: the panel's four scores, not the four "
            "files', which go metric by metric)",
            "the same host runs the client and the servers: two servers share its 2 cores",
        ],
        models=[args.model],
        settings={"rounds": args.rounds, "articles": args.articles},
    )


if __name__ == "__main__":
    main()
