"""anvil against DeepEval in one run: the same GGUF, the same cases, the same host and hour.

    pip install -e '.[compare]'        # DeepEval, pinned
    python benchmarks/vs_deepeval.py --articles 3 [--model smollm2-135m-instruct]

The four SummEval G-Eval metrics (`examples/geval/*.toml`, steps and rubric pinned, so neither
tool writes steps) judge the first 16 summaries of each of `--articles` documents.

- DeepEval runs its own `GEval` with the same name, criteria, steps and rubric, through a
  `DeepEvalBaseLLM` over llama-cpp-python: JSON-schema output (llama.cpp's grammar), greedy,
  the same threads, batch and context. It asks for a score and a reason in one answer.
- anvil runs `evaluate()` on the same file with no cache and no reason.

The tools take turns article by article (DeepEval on an article's cases, then anvil on the
same cases), so a noisy neighbour slows both alike. Each keeps its own model instance, so
each keeps what its own llama.cpp context has read. The raw llama.cpp ceiling of the host
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


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--articles", type=int, default=3, help="documents, 16 summaries each")
    p.add_argument("--per-article", type=int, default=16)
    args = p.parse_args()
    try:
        from deepeval.test_case import LLMTestCase as DeepEvalCase
    except ImportError:
        raise SystemExit("DeepEval is not installed: pip install -e '.[compare]'") from None

    cases = summeval_cases(args.data, args.articles, args.per_article)
    metrics = [load_metric(ROOT / "examples" / "geval" / f"{n}.toml") for n in NAMES]
    model = ResolvedModel.resolve(args.model)
    threads = model.settings.resolved_threads()
    ceiling = probe(Path(model.path), threads, throughput=True)
    judge = get_judge(model)
    theirs = make_deepeval_model(model)
    their_metrics = deepeval_metrics(metrics, theirs)
    import deepeval

    print(f"model {model.name} ({Path(model.path).name}), {threads} threads")
    print(f"DeepEval {deepeval.__version__}, llama.cpp {ceiling.llama_cpp_version}")
    print(
        f"raw llama.cpp: {ceiling.prompt_tokens_per_s:.0f} prompt tokens/s, "
        f"{ceiling.generated_tokens_per_s:.0f} generated tokens/s"
    )
    by_article: dict[str, list] = {}
    for case in cases:
        by_article.setdefault(case.input, []).append(case)
    print(f"{len(cases)} cases from {len(by_article)} articles x {len(metrics)} G-Eval metrics")

    their_seconds = ours_seconds = 0.0
    their_scores: list[float] = []
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
                            their_scores.append(metric.score)
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
    n = len(cases)
    theirs_per_case, ours_per_case = their_seconds / n, ours_seconds / n
    their_tokens = (theirs.prompt_tokens + theirs.completion_tokens) / n
    floor_theirs = (
        theirs.prompt_tokens / n / ceiling.prompt_tokens_per_s
        + theirs.completion_tokens / n / ceiling.generated_tokens_per_s
    )
    assert ours_usage is not None
    floor_ours = ours_usage.evaluated_tokens / n / ceiling.prompt_tokens_per_s
    print()
    print("| tool | s/case | tokens/case | at the raw ceiling s/case | time above it |")
    print("|---|---|---|---|---|")
    print(
        f"| DeepEval {deepeval.__version__} | {theirs_per_case:.2f} | {their_tokens:.0f} "
        f"(prompt {theirs.prompt_tokens / n:.0f}, generated {theirs.completion_tokens / n:.0f}) "
        f"| {floor_theirs:.2f} | {theirs_per_case / floor_theirs:.2f}x |"
    )
    print(
        f"| anvil | {ours_per_case:.2f} | {ours_usage.evaluated_tokens / n:.0f} evaluated "
        f"(prompt trie {ours_usage.distinct_tokens / n:.0f}) | {floor_ours:.2f} "
        f"| {ours_per_case / floor_ours:.2f}x |"
    )
    print(f"ratio: anvil is {theirs_per_case / ours_per_case:.1f}x faster per case")
    print(
        f"DeepEval answers that failed to parse: {theirs.failures}, metric errors: {errors} "
        f"of {n * len(metrics)}"
    )
    print(
        f"anvil tokens evaluated / prompt trie: "
        f"{ours_usage.evaluated_tokens / max(1, ours_usage.distinct_tokens):.2f}x"
    )


if __name__ == "__main__":
    main()
