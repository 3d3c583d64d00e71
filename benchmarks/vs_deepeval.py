"""anvil against DeepEval in one run: the same GGUF, the same cases, the same host and hour.

    pip install -e '.[compare]'        # DeepEval, pinned
    python benchmarks/vs_deepeval.py --articles 3
    python benchmarks/vs_deepeval.py --workload dag --rounds 3
    python benchmarks/vs_deepeval.py --model smollm2-135m-instruct   # one file only

G-Eval (the default workload): the four SummEval G-Eval metrics (`examples/geval/*.toml`,
steps and rubric pinned, so neither tool writes steps) judge the first 16 summaries of each
of `--articles` documents. DAG: the summary-headings graph of DeepEval's DAG article with the
model at every node (`examples/headings_llm.toml`: a task node extracts the headings, a
yes/no node and a multiple-choice node grade them), exported to DeepEval's own
`DeepAcyclicGraph` and run by its `DAGMetric` (no reason, as anvil), on the 4 meeting
summaries, `--rounds` times.

- DeepEval runs its own `GEval` with the same name, criteria, steps and rubric, through a
  `DeepEvalBaseLLM` over llama-cpp-python: JSON-schema output (llama.cpp's grammar), greedy,
  the same threads, batch and context. It asks for a score and a reason in one answer.
- anvil runs `evaluate()` on the same file with no cache and no reason.
- With `--panel`, "anvil panel" runs too: the same four files as one G-Eval panel
  (`examples/geval/summeval_panel.toml`: each member's prompt holds the four definitions, then
  the case, then a cue naming the member), on its own model instance. Its scores are those of
  the panel, not of each file alone (see benchmarks/agreement.md for how they agree with people).

Files: with no `--model`, both tools run on the catalogue's shipped file and on the file
`anvil models tune` chose for this host (when it differs), so the table holds the same-file
ratio for each file and the ratio a user sees switching tools: anvil on its tuned default
against DeepEval on the shipped GGUF. `--model NAME` runs that file alone instead, and
`--also NAME` (repeatable) adds a file to either set.

The contenders (each tool on each file) take turns article by article (for the DAG, case by
case), so a noisy neighbour slows all alike. Each keeps its own model instance, so each keeps
what its own llama.cpp context has read. The raw llama.cpp ceiling of each file (prompt and
generated tokens/s, the `anvil doctor` probe) is measured at the start, and the table says
how far above it each contender's time per case is: prompt tokens at the prompt rate,
generated ones (DeepEval's completions, anvil's one-token decodes) at the generated rate.

Figures: benchmarks/results/vs_deepeval_geval.json or vs_deepeval_dag.json (by --workload).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import (
    HEADINGS_LLM,
    Timer,
    add_articles,
    add_rounds,
    fresh_cache,
    geval_files,
    geval_panel,
    meeting_cases,
    parser,
    summeval_cases,
    write_figures,
)

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_GRPC_LOGGING", "NO")

from anvil_local import Judge, evaluate, load_metric
from anvil_local.judge import ResolvedModel
from anvil_local.judge.native import probe
from anvil_local.models import default_entry, get_judge, resolve_model

COLUMNS = [
    "tool",
    "file",
    "s/case",
    "tokens/case",
    "at the raw ceiling s/case",
    "time above it",
    "vs DeepEval, same file",
]
REASON_TOKENS = 300  # DeepEval's answer (score + reason) must fit; a cut answer is an error


def make_deepeval_model(model: ResolvedModel):
    """DeepEval's custom-model interface over llama-cpp-python (built here so that this
    module imports without DeepEval)."""
    from deepeval.models import DeepEvalBaseLLM
    from llama_cpp import Llama

    settings = model.settings
    threads = settings.threads

    class GGUFModel(DeepEvalBaseLLM):
        def __init__(self) -> None:
            self.llama = Llama(
                model_path=str(model.path),
                n_ctx=settings.n_ctx,
                n_batch=settings.n_batch,
                n_ubatch=settings.n_batch,
                n_threads=threads,
                n_threads_batch=threads,
                seed=settings.seed,
                verbose=False,
            )
            self.prompt_tokens = 0
            self.completion_tokens = 0
            self.failures = 0
            super().__init__(model_name=Path(model.path).name)

        def load_model(self):
            return self.llama

        def get_model_name(self) -> str:
            return f"llama-cpp {Path(model.path).name}"

        def generate(self, prompt: str, schema=None):
            fmt = None
            if schema is not None:
                fmt = {"type": "json_object", "schema": schema.model_json_schema()}
            out = self.llama.create_chat_completion(
                messages=[{"role": "user", "content": prompt}],
                response_format=fmt,
                temperature=0.0,
                max_tokens=REASON_TOKENS,
            )
            self.prompt_tokens += out["usage"]["prompt_tokens"]
            self.completion_tokens += out["usage"]["completion_tokens"]
            text = out["choices"][0]["message"]["content"] or ""
            if schema is None:
                return text
            try:
                return schema.model_validate_json(text)
            except ValueError:
                self.failures += 1
                return text

        async def a_generate(self, prompt: str, schema=None):
            return self.generate(prompt, schema)

    return GGUFModel()


def deepeval_metrics(metrics, judge):
    """DeepEval GEval objects with the same definition as anvil's metric files."""
    from deepeval.metrics import GEval
    from deepeval.metrics.g_eval import Rubric
    from deepeval.test_case import SingleTurnParams as DeepEvalParams

    made = []
    for metric in metrics:
        made.append(
            GEval(
                name=metric.name,
                criteria=metric.criteria,
                evaluation_steps=list(metric.evaluation_steps),
                rubric=[
                    Rubric(score_range=r.score_range, expected_outcome=r.expected_outcome)
                    for r in metric.rubric or ()
                ],
                evaluation_params=[DeepEvalParams(p.value) for p in metric.evaluation_params],
                threshold=metric.threshold,
                model=judge,
                async_mode=False,
                verbose_mode=False,
            )
        )
    return made


def ceiling_line(name: str, ceiling) -> str:
    return (
        f"raw llama.cpp, {name}: {ceiling.prompt_tokens_per_s:.0f} prompt tokens/s, "
        f"{ceiling.generated_tokens_per_s:.0f} generated tokens/s"
    )


@dataclass
class Contender:
    """One tool on one file, with what it spent over the run."""

    tool: str  # "DeepEval", "anvil" or "anvil panel"
    model: ResolvedModel
    ceiling: Any
    llm: Any = None  # DeepEval: the GGUFModel (its token counters); anvil: the loaded judge
    seconds: float = 0.0
    usage: Any = None  # anvil: the summed Usage
    errors: int = 0
    scores: list = field(default_factory=list)
    generated: int = 0  # anvil: one-token generation decodes (counted by `count_generation`)

    @property
    def file(self) -> str:
        return Path(self.model.path).name

    def add_usage(self, usage) -> None:
        self.usage = usage if self.usage is None else self.usage + usage

    def tokens(self, n: int) -> tuple[float, str]:
        """(seconds per case at the raw ceiling, tokens per case and how they split)."""
        rate = self.ceiling
        if self.tool == "DeepEval":
            prompt, generated = self.llm.prompt_tokens / n, self.llm.completion_tokens / n
            floor = prompt / rate.prompt_tokens_per_s + generated / rate.generated_tokens_per_s
            return (
                floor,
                f"{prompt + generated:.0f} (prompt {prompt:.0f}, generated {generated:.0f})",
            )
        evaluated, trie = self.usage.evaluated_tokens / n, self.usage.distinct_tokens / n
        generated = self.generated / n  # part of `evaluated`, read at the generated rate
        floor = (evaluated - generated) / rate.prompt_tokens_per_s
        floor += generated / rate.generated_tokens_per_s
        split = f"; {generated:.1f} generated" if self.generated else ""
        return floor, f"{evaluated:.0f} evaluated (trie {trie:.0f}{split})"


def count_generation(contender: Contender) -> None:
    """Count anvil's one-token generation decodes (its `evaluate(..., exact=False)` calls):
    they are part of its evaluated tokens, but the raw ceiling reads them at the generated
    rate, as it does DeepEval's completion tokens."""
    runtime = contender.llm.runtime
    evaluate_tokens = runtime.evaluate

    def counted(tokens, exact=True):
        result = evaluate_tokens(tokens, exact)
        if not exact:
            contender.generated += result[2]
        return result

    runtime.evaluate = counted


def table(label: str, n: int, contenders: list[Contender]) -> tuple[list[list], list[str]]:
    """Seconds and tokens per case for every contender, then the ratios: each file on its
    own (same GGUF for both tools), and anvil's fastest against DeepEval on the first file.
    Returns the table's rows (with each anvil row's same-file ratio) and the ratio lines."""
    import deepeval

    print()
    print(label)
    print("| tool | file | s/case | tokens/case | at the raw ceiling s/case | time above it |")
    print("|---|---|---|---|---|---|")
    theirs = {c.file: c for c in contenders if c.tool == "DeepEval"}
    rows = []
    for c in contenders:
        floor, tokens = c.tokens(n)
        tool = f"DeepEval {deepeval.__version__}" if c.tool == "DeepEval" else c.tool
        print(
            f"| {tool} | {c.file} | {c.seconds / n:.2f} | {tokens} | {floor:.2f} "
            f"| {c.seconds / n / floor:.2f}x |"
        )
        same_file = None if c.tool == "DeepEval" else theirs[c.file].seconds / c.seconds
        rows.append([tool, c.file, c.seconds / n, tokens, floor, c.seconds / n / floor, same_file])
    lines = []
    first = contenders[0]
    for tool in sorted({c.tool for c in contenders if c.tool != "DeepEval"}):
        ours = {c.file: c for c in contenders if c.tool == tool}
        for file, c in ours.items():
            ratio = theirs[file].seconds / c.seconds
            lines.append(f"same file, {file}: {tool} is {ratio:.1f}x faster per case")
        fastest = min(ours.values(), key=lambda c: c.seconds)
        if fastest.file != first.file:
            lines.append(
                f"{tool} on {fastest.file} against DeepEval on {first.file}: "
                f"{first.seconds / fastest.seconds:.1f}x faster per case"
            )
        for c in ours.values():
            ratio = c.usage.evaluated_tokens / max(1, c.usage.distinct_tokens)
            lines.append(f"{tool} tokens evaluated / prompt trie, {c.file}: {ratio:.2f}x")
    for c in theirs.values():
        lines.append(
            f"DeepEval on {c.file}: answers that failed to parse {c.llm.failures}, "
            f"metric errors {c.errors} of its calls"
        )
    for line in lines:
        print(line)
    return rows, lines


def run_geval(args, contenders: list[Contender]) -> tuple[str, list[list], list[str]]:
    from deepeval.test_case import LLMTestCase as DeepEvalCase

    cases = summeval_cases(args.data, args.articles, args.per_article)
    metrics = geval_files()
    panel = geval_panel()
    theirs = {id(c): deepeval_metrics(metrics, c.llm) for c in contenders if c.tool == "DeepEval"}
    by_article: dict[str, list] = {}
    for case in cases:
        by_article.setdefault(case.input, []).append(case)
    title = f"{len(cases)} cases from {len(by_article)} articles x {len(metrics)} G-Eval metrics"
    print(title)

    with fresh_cache():
        for number, group in enumerate(by_article.values(), 1):
            for c in contenders:
                with Timer() as t:
                    if c.tool == "DeepEval":
                        for case in group:
                            dc = DeepEvalCase(input=case.input, actual_output=case.actual_output)
                            for metric in theirs[id(c)]:
                                try:
                                    metric.measure(dc, _show_indicator=False)
                                except Exception:  # a cut or malformed answer: it gives up
                                    c.errors += 1
                    else:
                        ms = panel if c.tool == "anvil panel" else metrics
                        outcome = evaluate(
                            group, ms, model=c.llm, use_cache=False, include_reason=False
                        )
                c.seconds += t.seconds
                if c.tool != "DeepEval":
                    c.add_usage(outcome.usage)
            so_far = ", ".join(f"{c.tool} {c.file} {c.seconds:.1f} s" for c in contenders)
            print(f"  article {number}: {so_far}", flush=True)
    rows, lines = table("G-Eval", len(cases), contenders)
    return f"G-Eval: {title}", rows, lines


def run_dag(args, contenders: list[Contender]) -> tuple[str, list[list], list[str]]:
    from deepeval.metrics import DAGMetric
    from deepeval.metrics.dag import DeepAcyclicGraph
    from deepeval.test_case import LLMTestCase as DeepEvalCase

    from anvil_local.spec.deepeval import to_deepeval

    cases = meeting_cases()
    metric = load_metric(HEADINGS_LLM)
    theirs = {
        id(c): DAGMetric(
            name=metric.name,
            dag=DeepAcyclicGraph.from_dict(to_deepeval(metric.to_dict())),
            model=c.llm,
            include_reason=False,
            async_mode=False,
            verbose_mode=False,
        )
        for c in contenders
        if c.tool == "DeepEval"
    }
    title = f"{len(cases)} meeting summaries x {args.rounds} rounds, {metric.name}"
    print(title)
    with fresh_cache():
        for _ in range(args.rounds):
            for c in contenders:
                if c.tool == "anvil":
                    c.llm.trie.__init__()  # the trie of one pass: rounds repeat the prompts
            for case in cases:
                dc = DeepEvalCase(input=case.input or "", actual_output=case.actual_output)
                for c in contenders:
                    score = None
                    with Timer() as t:
                        if c.tool == "DeepEval":
                            try:
                                score = theirs[id(c)].measure(dc, _show_indicator=False)
                            except Exception:  # a cut or malformed answer: it gives up
                                c.errors += 1
                        else:
                            outcome = evaluate(
                                [case], [metric], model=c.llm, use_cache=False,
                                include_reason=False,
                            )  # fmt: skip
                    c.seconds += t.seconds
                    if c.tool == "anvil":
                        c.add_usage(outcome.usage)
                        score = outcome.lines[0].result.score
                    c.scores.append(score)
    rows, lines = table("headings DAG", len(cases) * args.rounds, contenders)
    for c in contenders:
        line = f"scores, first round, {c.tool} on {c.file}: {c.scores[: len(cases)]}"
        print(line)
        lines.append(line)
    return f"headings DAG: {title}", rows, lines


def default_files() -> list[str]:
    """The catalogue's shipped file, then the host's tuned default when it is another file."""
    shipped = default_entry().name
    tuned = resolve_model(None)
    return [shipped] if tuned.name == shipped else [shipped, tuned.name]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workload", choices=["geval", "dag"], default="geval")
    add_articles(p, 3)
    p.add_argument("--per-article", type=int, default=16)
    add_rounds(p, 3, "DAG: passes over the 4 cases")
    p.add_argument(
        "--panel",
        action="store_true",
        help="G-Eval: also run the four files as one G-Eval panel (on its own model instance)",
    )
    p.add_argument(
        "--also",
        action="append",
        default=[],
        help="another file both tools run (repeatable); without --model the run already "
        "holds the shipped and the tuned file",
    )
    args = p.parse_args()
    try:
        import deepeval
    except ImportError:
        raise SystemExit("DeepEval is not installed: pip install -e '.[compare]'") from None

    names = [args.model] if args.model else default_files()
    names += [name for name in args.also if name not in names]
    contenders: list[Contender] = []
    ceilings = []
    for name in names:
        model = resolve_model(name)
        threads = model.settings.threads
        ceiling = probe(Path(model.path), threads, throughput=True)
        print(f"model {model.name} ({Path(model.path).name}), {threads} threads")
        print(ceiling_line(Path(model.path).name, ceiling))
        ceilings.append(ceiling_line(Path(model.path).name, ceiling))
        contenders.append(Contender("DeepEval", model, ceiling, make_deepeval_model(model)))
        contenders.append(Contender("anvil", model, ceiling, get_judge(model)))
        count_generation(contenders[-1])
        if args.panel and args.workload == "geval":
            contenders.append(Contender("anvil panel", model, ceiling, Judge.load(model)))
    print(f"DeepEval {deepeval.__version__}, llama.cpp {contenders[0].ceiling.llama_cpp_version}")
    run = run_geval if args.workload == "geval" else run_dag
    title, rows, lines = run(args, contenders)
    write_figures(
        args,
        f"vs_deepeval_{args.workload}",
        f"anvil against DeepEval {deepeval.__version__}, {title}",
        COLUMNS,
        rows,
        formats={
            "s/case": ".2f",
            "at the raw ceiling s/case": ".2f",
            "time above it": "{:.2f}x",
            "vs DeepEval, same file": "{:.1f}x faster",
        },
        units={"s/case": "s", "at the raw ceiling s/case": "s"},
        notes=ceilings + lines,
        models=[c.model for c in contenders if c.tool == "DeepEval"],
        settings={
            "workload": args.workload,
            "articles": args.articles,
            "per_article": args.per_article,
            "rounds": args.rounds,
            "panel": args.panel,
            "threads": contenders[0].model.settings.threads,
        },
    )


if __name__ == "__main__":
    main()
