"""What the trained adapter costs a case: the faithfulness question on the same QAGS-XSum
cases with the untrained judge and with `smollm2-135m-faithful` (the same Q4_1 file with
the LoRA adapter over it), in alternating rounds (who goes first swaps each round), so a
noisy neighbour slows both alike. No cache; each round on a fresh cache directory.

    python benchmarks/adapter_cost.py [--adapter smollm2-135m-faithful] [--cases 12] [--rounds 4]

A merged conversion (`anvil models convert smollm2-135m-faithful --format Q8_0`) is measured
against the base's conversion to the same format:

    python benchmarks/adapter_cost.py --base smollm2-135m-instruct-q8_0 \
        --adapter smollm2-135m-faithful-q8_0

The ratio is taken within each round, then its median over rounds. Figures:
benchmarks/results/adapter_cost.json.
"""

from __future__ import annotations

import statistics

from harness import DATA_DIR, ROOT, Timer, add_out, fresh_cache, write_figures

from anvil_local import evaluate
from anvil_local.models import get_judge, resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric

QUESTION = ROOT / "examples" / "small_judge" / "faithfulness.toml"
BASE, TRAINED = "smollm2-135m-instruct", "smollm2-135m-faithful"


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument("--cases", type=int, default=12)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--adapter", default=TRAINED, help="the adapter model (catalogue name)")
    p.add_argument("--base", default=BASE, help="the judge it is measured against")
    add_out(p)
    args = p.parse_args()
    base = args.base
    rows = read_cases(DATA_DIR / "qags_xsum.jsonl")[: args.cases]
    metric = load_metric(QUESTION)
    trained = args.adapter
    models = {name: resolve_model(name) for name in (base, trained)}
    judges = {name: get_judge(m) for name, m in models.items()}  # loaded before timing
    seconds: dict[str, list[float]] = {base: [], trained: []}
    tokens: dict[str, float] = {}
    ratios = []
    for round_ in range(args.rounds):
        order = (base, trained) if round_ % 2 == 0 else (trained, base)
        for name in order:
            with fresh_cache(), Timer() as t:
                outcome = evaluate(
                    rows, [metric], model=judges[name], use_cache=False, include_reason=False
                )
            seconds[name].append(t.seconds / len(rows))
            tokens[name] = sum(x.result.usage.evaluated_tokens for x in outcome.lines) / len(rows)
        ratios.append(seconds[trained][-1] / seconds[base][-1])
        print(f"round {round_ + 1}: {trained} / {base} {ratios[-1]:.3f}", flush=True)
    out_rows = [
        [name, round(statistics.median(seconds[name]), 3), round(tokens[name], 1)]
        for name in (base, trained)
    ]
    out_rows.append(
        [f"{trained} / {base}, median of the rounds' ratios", statistics.median(ratios), None]
    )
    write_figures(
        args,
        "adapter_cost",
        f"The faithfulness question on {trained} against {base} ({len(rows)} QAGS-XSum "
        f"cases, {args.rounds} alternating rounds)",
        ["judge", "s/case (median)", "tokens evaluated/case"],
        out_rows,
        variant=variant(trained, base),
        formats={"s/case (median)": ".3f"},
        notes=[f"per-round ratios: {', '.join(f'{r:.3f}' for r in ratios)}"],
        models=list(models.values()),
    )


def variant(trained: str, base: str) -> str | None:
    """The shipped pair keeps the plain file; another adapter over the default base is named
    by the adapter; any other pair by both."""
    if base == BASE:
        return None if trained == TRAINED else trained
    return f"{trained}-against-{base}"


if __name__ == "__main__":
    main()
