"""anvil's decomposed RAG metrics against DeepEval 4.3.1's own, in one run: the same GGUF,
the same cases, the same host and hour.

    pip install -e '.[compare]'        # DeepEval, pinned
    python benchmarks/vs_deepeval_rag.py --squad SQUAD.json --cases 8

The cases are the first `--cases` relevant cases of benchmarks/rag_agreement.py's SQuAD set
(a question, the sentence of its paragraph holding the answer as the output and as the
expected output, the paragraph as the one retrieval-context chunk). Each tool runs
`FaithfulnessMetric`, `AnswerRelevancyMetric` and `ContextualPrecisionMetric` on each case,
without reasons, on its own instance of the same file; the tools take turns case by case.

- DeepEval runs its own metrics through a `DeepEvalBaseLLM` over llama-cpp-python (JSON-schema
  output through llama.cpp's grammar, greedy, the same threads, batch and context;
  vs_deepeval.py's model) with a budget of 1,024 generated tokens a call. A parse failure is
  an answer its schema rejects; a metric error is an exception out of `measure`.
- anvil runs the same metrics from `anvil_local` through `evaluate()`, no cache, on the same
  file (Faithfulness and ContextualPrecision with `wording="deepeval"`: DeepEval's questions,
  not the trained adapter's).

Figures: benchmarks/results/vs_deepeval_rag.json.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_GRPC_LOGGING", "NO")

import vs_deepeval
from harness import parser, write_figures
from rag_agreement import qa_cases
from trained_judge import BASE

import anvil_local
from anvil_local import evaluate
from anvil_local.models import resolve_model

METRICS = ("FaithfulnessMetric", "AnswerRelevancyMetric", "ContextualPrecisionMetric")


def deepeval_case(case):
    from deepeval.test_case import LLMTestCase

    return LLMTestCase(
        input=case.input,
        actual_output=case.actual_output,
        expected_output=case.expected_output,
        retrieval_context=list(case.retrieval_context),
    )


def main() -> None:
    p = parser(__doc__.split("\n\n")[0], data=False, model=False)
    p.add_argument("--squad", required=True, help="a SQuAD-format JSON file")
    p.add_argument("--cases", type=int, default=8)
    args = p.parse_args()
    import deepeval.metrics as theirs

    vs_deepeval.REASON_TOKENS = 1024
    model = resolve_model(BASE)
    cases = [good for good, _, _ in qa_cases(Path(args.squad), args.cases)]
    llm = vs_deepeval.make_deepeval_model(model)
    rows = []
    for name in METRICS:
        spent = {"DeepEval": 0.0, "anvil": 0.0}
        errors = {"DeepEval": 0, "anvil": 0}
        anvil_tokens = 0
        before_prompt, before_gen, before_fail = (
            llm.prompt_tokens,
            llm.completion_tokens,
            llm.failures,
        )
        for case in cases:
            metric = getattr(theirs, name)(model=llm, async_mode=False, include_reason=False)
            start = time.perf_counter()
            try:
                metric.measure(deepeval_case(case), _show_indicator=False)
            except Exception:  # a metric error, counted
                errors["DeepEval"] += 1
            spent["DeepEval"] += time.perf_counter() - start
            # the same file for both, so DeepEval's questions, not the adapter's
            extra = {"wording": "deepeval"} if name != "AnswerRelevancyMetric" else {}
            ours = getattr(anvil_local, name)(include_reason=False, **extra)
            start = time.perf_counter()
            outcome = evaluate([case], [ours], model=model, use_cache=False)
            spent["anvil"] += time.perf_counter() - start
            line = outcome.lines[0]
            errors["anvil"] += line.result.error is not None
            anvil_tokens += line.result.usage.evaluated_tokens
        n = len(cases)
        d_tokens = (llm.prompt_tokens - before_prompt + llm.completion_tokens - before_gen) / n
        rows.append(
            [
                name,
                "DeepEval 4.3.1",
                n,
                round(spent["DeepEval"] / n, 2),
                round(d_tokens),
                llm.failures - before_fail,
                errors["DeepEval"],
                None,
            ]
        )
        rows.append(
            [
                name,
                "anvil",
                n,
                round(spent["anvil"] / n, 2),
                round(anvil_tokens / n),
                0,
                errors["anvil"],
                round(spent["DeepEval"] / max(spent["anvil"], 1e-9), 1),
            ]
        )
        print(rows[-2], rows[-1], flush=True)
    write_figures(
        args,
        "vs_deepeval_rag",
        f"DeepEval's RAG metrics, DeepEval 4.3.1 against anvil on the same GGUF ({model.name}),"
        f" {len(cases)} SQuAD cases, no reasons",
        [
            "metric",
            "tool",
            "cases",
            "s/case",
            "tokens/case",
            "parse failures",
            "metric errors",
            "anvil faster",
        ],
        rows,
        formats={"anvil faster": "{:.1f}x"},
        notes=[
            "tokens/case: DeepEval's prompt + generated tokens; anvil's tokens evaluated by "
            "llama.cpp",
            "parse failures: DeepEval answers its JSON schema rejected (llama.cpp's grammar "
            "constrains the JSON, but a reply cut at the token budget still fails); anvil reads "
            "each verdict from the logits over the allowed labels",
        ],
        models=[model],
        settings={"cases": len(cases), "deepeval_generation_budget": 1024},
    )


if __name__ == "__main__":
    main()
