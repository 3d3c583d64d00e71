"""Could a panel's members be read in one decode? The four member prompts of one SummEval case
share everything but their last ~15 tokens (the cue). This reads those four suffixes in
turns on bare llama.cpp contexts of the same model and compares each member's logits, bit for
bit, with a cold evaluation of its whole prompt:

- one KV sequence, suffix after suffix from the shared prefix (what anvil does);
- one decode, the four suffixes in four sequences of one unified KV cache;
- one decode, the four suffixes in four separate KV streams (the prefix copied to each);
- the same, with the prefix copied before the clock starts.

    python benchmarks/multi_sequence.py --model smollm2-135m-instruct-q8_0

Figures: benchmarks/results/multi_sequence.<model>.json (one file per model).
"""

from __future__ import annotations

import time
from pathlib import Path

import llama_cpp as lib
import numpy as np
from harness import add_rounds, geval_panel, parser, summeval_cases, write_figures

from anvil_local import evaluate
from anvil_local.judge.runtime import batches, common_prefix
from anvil_local.models import get_judge

N_CTX, N_BATCH, MEMBERS = 2048, 512, 4


class Context:
    """A bare llama.cpp context: `streams` separate KV streams, or one unified cache."""

    def __init__(self, model, threads: int, sequences: int, unified: bool) -> None:
        params = lib.llama_context_default_params()
        params.flash_attn_type = 0  # off, as anvil runs (on, short batches read slower)
        params.n_ctx = N_CTX * (1 if unified else sequences)  # a stream holds one prompt
        params.n_batch = params.n_ubatch = N_BATCH
        params.n_threads = params.n_threads_batch = threads
        params.n_seq_max, params.kv_unified = sequences, unified
        self.ctx = lib.llama_init_from_model(model, params)
        self.memory = lib.llama_get_memory(self.ctx)
        self.batch = lib.llama_batch_init(N_BATCH, 0, sequences)
        self.n_vocab = lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(model))

    def decode(self, items: list[tuple[int, int, int, bool]]) -> None:
        """One decode of (token, position, sequence, wants logits) rows."""
        self.batch.n_tokens = len(items)
        for i, (token, pos, seq, wants) in enumerate(items):
            self.batch.token[i], self.batch.pos[i] = token, pos
            self.batch.n_seq_id[i], self.batch.seq_id[i][0] = 1, seq
            self.batch.logits[i] = wants
        if lib.llama_decode(self.ctx, self.batch) != 0:
            raise SystemExit("llama_decode failed")

    def read(self, tokens: list[int], start: int = 0, want_last: bool = True) -> None:
        """tokens[start:] into sequence 0, in anvil's batch sizes (none of one token)."""
        for size in batches(len(tokens) - start, N_BATCH):
            self.decode(
                [(tokens[p], p, 0, want_last and p == len(tokens) - 1)
                 for p in range(start, start + size)]
            )  # fmt: skip
            start += size

    def logits(self, row: int) -> np.ndarray:
        ptr = lib.llama_get_logits_ith(self.ctx, row)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()

    def clear(self) -> None:
        lib.llama_memory_clear(self.memory, True)


def member_prompts(model_name: str | None, data: Path) -> tuple[object, int, list[list[int]]]:
    """The token lists anvil evaluates for the four members on the second SummEval case."""
    judge = get_judge(model_name)
    seen: list[list[int]] = []
    evaluate_tokens = judge.runtime.evaluate

    def recording(tokens, exact=True):
        seen.append(list(tokens))
        return evaluate_tokens(tokens, exact)

    judge.runtime.evaluate = recording
    panel = geval_panel()
    cases = summeval_cases(data, 1, per_article=2)
    evaluate(cases, panel, model=judge, use_cache=False, include_reason=False)
    return judge, judge.runtime.llama.n_threads, seen[MEMBERS : 2 * MEMBERS]


def compare(
    name: str, reference: list[np.ndarray], found: list[np.ndarray], seconds: float, rounds: int
) -> list:
    verdicts = [
        "identical" if np.array_equal(r, f) else f"differs by {np.abs(r - f).max():.3g}"
        for r, f in zip(reference, found, strict=True)
    ]
    print(f"| {name} | {seconds * 1000 / rounds:.0f} | {', '.join(verdicts)} |")
    return [name, seconds * 1000 / rounds, ", ".join(verdicts)]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    add_rounds(p, 5, "timed reads of the four suffixes")
    args = p.parse_args()
    judge, threads, prompts = member_prompts(args.model, args.data)
    shared = min(common_prefix(prompts[0], p) for p in prompts[1:])
    model = judge.runtime.llama._model.model
    print(f"model {judge.model.name}, {threads} threads; prompts of {len(prompts[0])} tokens,")
    print(f"shared {shared}; member suffixes {[len(p) - shared for p in prompts]} tokens")
    print(
        "| how the four suffixes are read | ms a case | each member's logits against a cold read |"
    )
    print("|---|---|---|")

    one = Context(model, threads, 1, unified=True)
    reference = []
    for tokens in prompts:
        one.clear()
        one.read(tokens)
        reference.append(one.logits(-1))
    one.clear()
    one.read(prompts[0][:shared], want_last=False)
    items, last = [], []
    for seq, tokens in enumerate(prompts):
        items += [(tokens[p], p, seq, p == len(tokens) - 1) for p in range(shared, len(tokens))]
        last.append(len(items) - 1)
    many = {unified: Context(model, threads, MEMBERS, unified) for unified in (True, False)}
    for ctx in many.values():
        ctx.read(prompts[0][:shared], want_last=False)

    def one_after_another() -> list[np.ndarray]:
        found = []
        for tokens in prompts:
            lib.llama_memory_seq_rm(one.memory, 0, shared, -1)
            one.read(tokens, shared)
            found.append(one.logits(-1))
        return found

    def reset(ctx: Context) -> None:
        """Back to the shared prefix, in sequence 0 only."""
        for seq in range(1, MEMBERS):
            lib.llama_memory_seq_rm(ctx.memory, seq, -1, -1)
        lib.llama_memory_seq_rm(ctx.memory, 0, shared, -1)

    def copy_prefix(ctx: Context) -> None:
        for seq in range(1, MEMBERS):
            lib.llama_memory_seq_cp(ctx.memory, 0, seq, -1, -1)

    def prefix_in_every_stream(ctx: Context) -> None:
        reset(ctx)
        copy_prefix(ctx)
        ctx.decode(items[:2])  # a stream copy runs at the next decode
        for seq in range(MEMBERS):
            lib.llama_memory_seq_rm(ctx.memory, seq, shared, -1)

    def in_one_decode(ctx: Context, copy: bool = True) -> list[np.ndarray]:
        if copy:  # part of the cost: a separate stream copies the prefix's KV data
            copy_prefix(ctx)
        ctx.decode(items)
        return [ctx.logits(row) for row in last]

    def nothing() -> None:
        pass

    # each way: (untimed set-up, timed read)
    ways = {
        "one sequence, suffix after suffix": (nothing, one_after_another),
        "one decode, four sequences, one unified cache": (
            lambda: reset(many[True]),
            lambda: in_one_decode(many[True]),
        ),
        "one decode, four sequences, separate KV streams": (
            lambda: reset(many[False]),
            lambda: in_one_decode(many[False]),
        ),
        "the same, the prefix already in every stream (not timed)": (
            lambda: prefix_in_every_stream(many[False]),
            lambda: in_one_decode(many[False], copy=False),
        ),
    }
    seconds = dict.fromkeys(ways, 0.0)
    found: dict[str, list[np.ndarray]] = {}
    for _ in range(args.rounds):  # the ways take turns, so machine noise falls on all of them
        for name, (set_up, read) in ways.items():
            set_up()
            start = time.perf_counter()
            found[name] = read()
            seconds[name] += time.perf_counter() - start
    rows = [compare(name, reference, found[name], seconds[name], args.rounds) for name in ways]
    write_figures(
        args,
        "multi_sequence",
        f"The four members' suffixes of one SummEval case, read four ways, {judge.model.name}",
        ["how the four suffixes are read", "ms a case", "each member's logits against a cold read"],
        rows,
        variant=judge.model.name,
        formats={"ms a case": ".0f"},
        units={"ms a case": "ms"},
        notes=[
            f"prompts of {len(prompts[0])} tokens, shared {shared}; member suffixes "
            f"{[len(p) - shared for p in prompts]} tokens; {threads} threads"
        ],
        models=[judge],
        settings={"rounds": args.rounds, "threads": threads},
    )


if __name__ == "__main__":
    main()
