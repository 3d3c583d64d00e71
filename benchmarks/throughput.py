"""Prompt and generated tokens/s of one model in every format on this machine, per thread
count, and the share of the CPU's measured matrix-multiply rate that prompt reading reaches.

    python benchmarks/throughput.py --model smollm2-135m-instruct --threads 1 2

The formats are the model's catalogue file and every file `anvil models convert` made from
it. Each measurement is llama.cpp in a child process (the `anvil doctor` probe: a 256-token
prompt and 32 greedy steps, best of 3), and the formats are measured in interleaved rounds so
that a noisy neighbour slows them all alike; the table keeps each one's best round. The
hardware rate is numpy's fp32 matrix multiply (best of 5); a token of prompt costs about
2 x parameters floating-point operations.

Figures: benchmarks/results/throughput.json.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from harness import SHIPPED_MODEL, add_rounds, parser, write_figures

from anvil_local.judge.native import probe
from anvil_local.models import ensure_model, entries, get_entry

COLUMNS = [
    "format",
    "size",
    "threads",
    "prompt tokens/s",
    "generated tokens/s",
    "prompt vs first row",
    "share of matmul rate",
]


def formats_of(name: str) -> list[tuple[str, Path]]:
    """(format label, file) for the model and every file converted from it."""
    source = get_entry(name)
    found = [(source.description.split(",")[-1].strip() or source.name, ensure_model(source))]
    for entry in entries():
        if entry.source == source.name and entry.store_path().is_file():
            found.append((entry.format, entry.store_path()))
    return found


def matmul_gflops(threads_note: str, size: int = 1024, runs: int = 5) -> float:
    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((size, size), dtype=np.float32)
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def main() -> None:
    p = parser(
        __doc__.splitlines()[0],
        data=False,
        model_default=SHIPPED_MODEL,
        model_help=f"catalogue name (default: {SHIPPED_MODEL})",
    )
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    add_rounds(p, 2, "interleaved rounds per format")
    args = p.parse_args()
    files = formats_of(args.model)
    best: dict[tuple[str, int], tuple[float, float, int]] = {}
    for _ in range(args.rounds):
        for threads in args.threads:
            for label, path in files:
                result = probe(path, threads, throughput=True)
                key = (label, threads)
                prompt, gen = result.prompt_tokens_per_s or 0.0, result.generated_tokens_per_s
                old = best.get(key, (0.0, 0.0, 0))
                best[key] = (max(old[0], prompt), max(old[1], gen or 0.0), result.n_params or 0)
    flops = matmul_gflops("all")
    print(f"numpy fp32 matmul: {flops:.0f} GFLOP/s (1024 x 1024, best of 5)\n")
    print(
        "| format | size | threads | prompt tokens/s | generated tokens/s | prompt vs first row "
        "| share of matmul rate |"
    )
    print("|---|---|---|---|---|---|---|")
    rows = []
    for threads in args.threads:
        base = best[(files[0][0], threads)][0]
        for label, path in files:
            prompt, gen, params = best[(label, threads)]
            share = prompt * 2 * params / 1e9 / flops if params else float("nan")
            print(
                f"| {label} | {path.stat().st_size / 1e6:.0f} MB | {threads} | {prompt:.0f} | "
                f"{gen:.0f} | {prompt / base:.2f}x | {share:.0%} |"
            )
            rows.append(
                [
                    label,
                    f"{path.stat().st_size / 1e6:.0f} MB",
                    threads,
                    prompt,
                    gen,
                    prompt / base,
                    share,
                ]
            )
    write_figures(
        args,
        "throughput",
        f"Prompt and generated tokens/s of {args.model} in every format, best of "
        f"{args.rounds} interleaved rounds of the doctor's probe",
        COLUMNS,
        rows,
        formats={
            "prompt tokens/s": ".0f",
            "generated tokens/s": ".0f",
            "prompt vs first row": "{:.2f}x",
            "share of matmul rate": ".0%",
        },
        units={"prompt tokens/s": "tokens/s", "generated tokens/s": "tokens/s"},
        notes=[f"numpy fp32 matmul: {flops:.0f} GFLOP/s (1024 x 1024, best of 5)"],
        models=[path for _, path in files],
        settings={"threads": args.threads, "rounds": args.rounds},
    )


if __name__ == "__main__":
    main()
