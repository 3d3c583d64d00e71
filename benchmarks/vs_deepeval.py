"""anvil against DeepEval in one run: the same GGUF, the same cases, the same host and hour.

    pip install -e '.[compare]'        # DeepEval, pinned
    python benchmarks/vs_deepeval.py --articles 3 [--model smollm2-135m-instruct]
    python benchmarks/vs_deepeval.py --workload dag --rounds 3

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

The tools take turns article by article (for the DAG, case by case), so a noisy neighbour
slows both alike. Each keeps its own model instance, so each keeps what its own llama.cpp
context has read. The raw llama.cpp ceiling of the host
(prompt and generated tokens/s, the `anvil doctor` probe) is measured at the start, and the
table says how far above it each tool's time per case is.
"""

from __future__ import annotations

import os
from pathlib import Path

from common import ROOT, Timer, fresh_cache, parser, summeval_cases

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_GRPC_LOGGING", "NO")

from anvil_local import evaluate
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.native import probe
from anvil_local.judge.session import get_judge
from anvil_local.spec import load_metric

NAMES = ("coherence", "consistency", "fluency", "relevance")
REASON_TOKENS = 300  # DeepEval's answer (score + reason) must fit; a cut answer is an error


def make_deepeval_model(model: ResolvedModel):
    """DeepEval's custom-model interface over llama-cpp-python (built here so that this
    module imports without DeepEval)."""
    from deepeval.models import DeepEvalBaseLLM
    from llama_cpp import Llama

    settings = model.settings
    threads = settings.resolved_threads()

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


def ceiling_line(ceiling) -> str:
    return (
        f"raw llama.cpp: {ceiling.prompt_tokens_per_s:.0f} prompt tokens/s, "
        f"{ceiling.generated_tokens_per_s:.0f} generated tokens/s"
    )


def table(label: str, n: int, seconds: tuple[float, float], theirs, usage, ceiling) -> None:
    """The comparison table for `n` cases: DeepEval's and anvil's seconds, tokens, ceiling."""
    import deepeval

    theirs_per_case, ours_per_case = seconds[0] / n, seconds[1] / n
    their_tokens = (theirs.prompt_tokens + theirs.completion_tokens) / n
    floor_theirs = (
        theirs.prompt_tokens / n / ceiling.prompt_tokens_per_s
        + theirs.completion_tokens / n / ceiling.generated_tokens_per_s
    )
    floor_ours = usage.evaluated_tokens / n / ceiling.prompt_tokens_per_s
    print()
    print(label)
    print("| tool | s/case | tokens/case | at the raw ceiling s/case | time above it |")
    print("|---|---|---|---|---|")
    print(
        f"| DeepEval {deepeval.__version__} | {theirs_per_case:.2f} | {their_tokens:.0f} "
        f"(prompt {theirs.prompt_tokens / n:.0f}, generated {theirs.completion_tokens / n:.0f}) "
        f"| {floor_theirs:.2f} | {theirs_per_case / floor_theirs:.2f}x |"
    )
    print(
        f"| anvil | {ours_per_case:.2f} | {usage.evaluated_tokens / n:.0f} evaluated "
        f"(prompt trie {usage.distinct_tokens / n:.0f}) | {floor_ours:.2f} "
        f"| {ours_per_case / floor_ours:.2f}x |"
    )
    print(f"ratio: anvil is {theirs_per_case / ours_per_case:.1f}x faster per case")
    print(
        f"anvil tokens evaluated / prompt trie: "
        f"{usage.evaluated_tokens / max(1, usage.distinct_tokens):.2f}x"
    )


def run_geval(args, model, judge, theirs, ceiling) -> None:
    from deepeval.test_case import LLMTestCase as DeepEvalCase

    cases = summeval_cases(args.data, args.articles, args.per_article)
    metrics = [load_metric(ROOT / "examples" / "geval" / f"{n}.toml") for n in NAMES]
    their_metrics = deepeval_metrics(metrics, theirs)
    by_article: dict[str, list] = {}
    for case in cases:
        by_article.setdefault(case.input, []).append(case)
    print(f"{len(cases)} cases from {len(by_article)} articles x {len(metrics)} G-Eval metrics")

    their_seconds = ours_seconds = 0.0
    ours_usage = None
    errors = 0
    with fresh_cache():
        for number, group in enumerate(by_article.values(), 1):
            with Timer() as t:
                for case in group:
                    dc = DeepEvalCase(input=case.input, actual_output=case.actual_output)
                    for metric in their_metrics:
                        try:
                            metric.measure(dc, _show_indicator=False)
                        except Exception:  # a cut or malformed answer: DeepEval gives up
                            errors += 1
            their_seconds += t.seconds
            with Timer() as t:
                outcome = evaluate(
                    group, metrics, model=judge, use_cache=False, include_reason=False
                )
            ours_seconds += t.seconds
            usage = outcome.usage
            ours_usage = usage if ours_usage is None else ours_usage + usage
            print(
                f"  article {number}: DeepEval {their_seconds:7.1f} s, anvil "
                f"{ours_seconds:6.1f} s so far",
                flush=True,
            )
    table("G-Eval", len(cases), (their_seconds, ours_seconds), theirs, ours_usage, ceiling)
    print(
        f"DeepEval answers that failed to parse: {theirs.failures}, metric errors: {errors} "
        f"of {len(cases) * len(metrics)}"
    )


def run_dag(args, model, judge, theirs, ceiling) -> None:
    import json

    from deepeval.metrics import DAGMetric
    from deepeval.metrics.dag import DeepAcyclicGraph
    from deepeval.test_case import LLMTestCase as DeepEvalCase

    from anvil_local import LLMTestCase
    from anvil_local.spec.deepeval import to_deepeval

    rows = (ROOT / "examples" / "meeting_summaries.jsonl").read_text().splitlines()
    cases = [LLMTestCase(**json.loads(x)) for x in rows]
    metric = load_metric(ROOT / "examples" / "headings_llm.toml")
    dag = DeepAcyclicGraph.from_dict(to_deepeval(metric.to_dict()))
    their_metric = DAGMetric(
        name=metric.name,
        dag=dag,
        model=theirs,
        include_reason=False,
        async_mode=False,
        verbose_mode=False,
    )
    print(f"{len(cases)} meeting summaries x {args.rounds} rounds, {metric.name}")
    their_seconds = ours_seconds = 0.0
    ours_usage = None
    errors = agree = 0
    pairs: list[tuple[float | None, float | None]] = []
    with fresh_cache():
        for _ in range(args.rounds):
            judge.trie.__init__()  # the trie of one pass: rounds repeat the same prompts
            for case in cases:
                dc = DeepEvalCase(input=case.input or "", actual_output=case.actual_output)
                their_score = None
                with Timer() as t:
                    try:
                        their_score = their_metric.measure(dc, _show_indicator=False)
                    except Exception:  # a cut or malformed answer: DeepEval gives up
                        errors += 1
                their_seconds += t.seconds
                with Timer() as t:
                    outcome = evaluate(
                        [case], [metric], model=judge, use_cache=False, include_reason=False
                    )
                ours_seconds += t.seconds
                ours_usage = outcome.usage if ours_usage is None else ours_usage + outcome.usage
                ours = outcome.lines[0].result.score
                pairs.append((their_score, ours))
                if their_score is not None and ours is not None and abs(their_score - ours) < 1e-6:
                    agree += 1
    n = len(cases) * args.rounds
    table("headings DAG", n, (their_seconds, ours_seconds), theirs, ours_usage, ceiling)
    print(
        f"DeepEval answers that failed to parse: {theirs.failures}, metric errors: {errors} "
        f"of {n}; same score from both tools: {agree} of {n}"
    )
    print("scores, first round (DeepEval, anvil):", pairs[: len(cases)])


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workload", choices=["geval", "dag"], default="geval")
    p.add_argument("--articles", type=int, default=3, help="documents, 16 summaries each")
    p.add_argument("--per-article", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3, help="DAG: passes over the 4 cases")
    args = p.parse_args()
    try:
        import deepeval
    except ImportError:
        raise SystemExit("DeepEval is not installed: pip install -e '.[compare]'") from None

    model = ResolvedModel.resolve(args.model)
    threads = model.settings.resolved_threads()
    ceiling = probe(Path(model.path), threads, throughput=True)
    judge = get_judge(model)
    theirs = make_deepeval_model(model)
    print(f"model {model.name} ({Path(model.path).name}), {threads} threads")
    print(f"DeepEval {deepeval.__version__}, llama.cpp {ceiling.llama_cpp_version}")
    print(ceiling_line(ceiling))
    if args.workload == "geval":
        run_geval(args, model, judge, theirs, ceiling)
    else:
        run_dag(args, model, judge, theirs, ceiling)


if __name__ == "__main__":
    main()
