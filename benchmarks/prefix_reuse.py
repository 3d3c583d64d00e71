"""Issue: four questions over one SummEval document, cold (KV cache emptied before each
question) vs warm (the shared prefix kept). Prints tokens evaluated by llama.cpp against the
unique prompt tokens (the lower bound: the size of the token trie of the four prompts) and
seconds per question.

    python benchmarks/prefix_reuse.py [--data benchmarks/data/summeval.jsonl]

Figures: benchmarks/results/prefix_reuse.json.
"""

from __future__ import annotations

from harness import Timer, parser, summeval_cases, write_figures

from anvil_local import SingleTurnParams
from anvil_local.judge import HEADER, Judge, Prompt
from anvil_local.models import get_judge
from anvil_local.testcase import render_param

COLUMNS = ["mode", "evaluated", "x unique", "s question 1", "s question 2", "s question 3",
           "s question 4"]  # fmt: skip
QUESTIONS = [
    "Is the Actual Output a summary of the Input? Reply with Yes or No only.",
    "Does the Actual Output state anything the Input does not? Reply with Yes or No only.",
    "Is the Actual Output written in fluent English? Reply with Yes or No only.",
    "Rate how well the Actual Output covers the main points of the Input from 0 to 10.",
]


def unique_tokens(sequences: list[list[int]]) -> int:
    """Nodes of the trie of the sequences: tokens an ideal prefix cache evaluates."""
    seen: set[tuple[int, ...]] = set()
    for seq in sequences:
        for i in range(1, len(seq) + 1):
            seen.add(tuple(seq[:i]))
    return len(seen)


def ask(judge: Judge, prompt: Prompt, question: str):
    if "0 to 10" in question:
        return judge.score(prompt, 0, 10).usage
    return judge.choose(prompt, ["Yes", "No"]).usage


def main() -> None:
    args = parser(__doc__).parse_args()
    case = summeval_cases(args.data, articles=1, per_article=1)[0]
    blocks = (
        HEADER,
        render_param(SingleTurnParams.INPUT, case.input),
        render_param(SingleTurnParams.ACTUAL_OUTPUT, case.actual_output),
    )
    prompts = [Prompt(blocks, q) for q in QUESTIONS]
    judge = get_judge(args.model)
    lower_bound = unique_tokens([judge.prompt_tokens(p) for p in prompts])
    total_prompt = sum(len(judge.prompt_tokens(p)) for p in prompts)
    rows = {}
    for mode in ("cold", "warm"):
        evaluated, seconds = 0, []
        judge.runtime.evaluate(judge.runtime.tokenize("Unrelated warm-up.", special=False))
        for prompt, question in zip(prompts, QUESTIONS, strict=True):
            if mode == "cold":
                judge.runtime.evaluate(judge.runtime.tokenize("Reset.", special=False))
            with Timer() as t:
                usage = ask(judge, prompt, question)
            evaluated += usage.evaluated_tokens
            seconds.append(t.seconds)
        rows[mode] = (evaluated, seconds)
    print(
        f"case {case.id}: 4 questions, {total_prompt} prompt tokens in all, "
        f"{lower_bound} unique (lower bound)"
    )
    print(f"{'mode':<6}{'evaluated':>10}{'x unique':>10}   seconds per question")
    for mode, (evaluated, seconds) in rows.items():
        per = " ".join(f"{s:6.3f}" for s in seconds)
        print(f"{mode:<6}{evaluated:>10}{evaluated / lower_bound:>10.3f}   {per}")
    write_figures(
        args,
        "prefix_reuse",
        "Four questions over one SummEval case: tokens evaluated and seconds, cold and warm",
        COLUMNS,
        [
            [mode, evaluated, evaluated / lower_bound, *seconds]
            for mode, (evaluated, seconds) in rows.items()
        ],
        formats={"x unique": ".3f", **{c: ".3f" for c in COLUMNS[3:]}},
        units={"evaluated": "tokens", **{c: "s" for c in COLUMNS[3:]}},
        notes=[
            f"case {case.id}: 4 questions, {total_prompt} prompt tokens in all, "
            f"{lower_bound} unique (lower bound)"
        ],
        models=[judge],
    )


if __name__ == "__main__":
    main()
