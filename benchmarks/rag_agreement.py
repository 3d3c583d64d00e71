"""DeepEval's decomposed RAG metrics against human labels, with 95% intervals over resampled
documents (whole documents drawn with replacement).

    python benchmarks/rag_agreement.py faithfulness [--task qags_xsum --task summedits]
    python benchmarks/rag_agreement.py summarization [--docs 10]
    python benchmarks/rag_agreement.py qa --squad SQUAD.json [--limit 80]

faithfulness: FaithfulnessMetric on the dev halves of QAGS-XSum and SummEdits (each case's
summary its output, its document the one retrieval-context chunk), in both wordings, against
the shipped faithfulness question (examples/small_judge/faithfulness.toml, P(Yes)) and the
n-gram code head (out of fold), paired on the same documents.

summarization: SummarizationMetric on SummEval's first `--docs` documents (16 summaries
each), per-document Spearman with consistency and relevance; its alignment and coverage
parts alone too.

qa: the contextual metrics and AnswerRelevancy on a labelled set made from SQuAD (CC BY-SA
4.0) by `qa_cases`: for the first answerable question of each paragraph, the paragraph is the
relevant node and the next paragraph of the same article the irrelevant one; the sentence
holding the answer is the relevant answer, the next paragraph's question's answer sentence
the irrelevant one. Documents are paragraphs. The file measured: `dev-v1.1.json` of the public
repository VinACE/san_mrc at commit 74f10c582d3f (despite its name, the first five articles of
SQuAD 2.0's dev set: Normans to Victoria (Australia), 173 paragraphs), sha256
db71d0a19c3f656b1ebefafce642b828cfab269f0d906312dfb0efdc7173b31a. It is not committed here.

Figures: benchmarks/results/rag_faithfulness.json, rag_summarization.json, rag_qa.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from harness import DATA_DIR, add_out, write_figures
from trained_judge import BASE, QUESTION, TRAINED, code_features, scores

from anvil_local import (
    AnswerRelevancyMetric,
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
    FaithfulnessMetric,
    LLMTestCase,
    SummarizationMetric,
    evaluate,
)
from anvil_local.bench import stats
from anvil_local.bench.fit import design, out_of_fold
from anvil_local.bench.suite import document_of, labels_of
from anvil_local.metrics.rag.segment import sentences
from anvil_local.models import resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric

TASKS = {
    "qags_xsum": ("qags_xsum.jsonl", "labels.consistent"),
    "summedits": ("summedits_news.jsonl", "labels.consistent"),
}
FOLDS = 5


def readings(metric: Any, cases: list[LLMTestCase], model: Any) -> dict[str, np.ndarray]:
    """Each case's score (DeepEval's count), expected score (from the probabilities), the
    trace's breakdown parts, and its cost."""
    outcome = evaluate(cases, [metric], model=model, include_reason=False)
    by_case = {line.case_id: line.result for line in outcome.lines}
    results = [by_case[c.id] for c in cases]
    errors = [c.id for c, r in zip(cases, results, strict=True) if r.error]
    if errors:
        raise SystemExit(f"{metric.name}: {len(errors)} case(s) errored, first {errors[0]}")
    out: dict[str, Any] = {
        "score": np.array([r.score for r in results], dtype=float),
        "expected": np.array([r.trace.get("expected_score") for r in results], dtype=float),
        "tokens": np.mean([r.usage.evaluated_tokens for r in results]),
        "calls": np.mean([r.usage.calls for r in results]),
    }
    for part in ("Alignment", "Coverage"):
        values = [(r.trace.get("breakdown") or {}).get(part) for r in results]
        if all(v is not None for v in values):
            out[part] = np.array(values, dtype=float)
    return out


def auroc_of(pred: np.ndarray, human: np.ndarray, groups: list) -> stats.Estimate:
    label = human.astype(int)
    return stats.estimate(lambda i: stats.auroc(pred[i], label[i]), groups, len(pred))


def paired(a: np.ndarray, b: np.ndarray, human: np.ndarray, groups: list) -> stats.Estimate:
    label = human.astype(int)
    return stats.estimate(
        lambda i: stats.auroc(a[i], label[i]) - stats.auroc(b[i], label[i]), groups, len(a)
    )


def cell(e: stats.Estimate) -> dict[str, float]:
    return {"value": e.value, "low": e.low, "high": e.high}


def as_cases(rows: list) -> list[LLMTestCase]:
    """A summary's document as its one retrieval-context chunk."""
    return [
        LLMTestCase(
            input="Summarize the document.",
            actual_output=r.case.actual_output,
            retrieval_context=[r.case.input],
            id=r.case_id,
        )
        for r in rows
    ]


def faithfulness(args: Any) -> None:
    trained, base = resolve_model(TRAINED), resolve_model(BASE)
    rows_out, notes = [], []
    for task in args.task or list(TASKS):
        data_name, label = TASKS[task]
        rows = read_cases(DATA_DIR / data_name)
        human = np.asarray(labels_of(rows, label, data_name), dtype=float)
        docs = [document_of(r) for r in rows]
        groups = stats.doc_groups(docs)
        cases = as_cases(rows)
        runs = {
            "FaithfulnessMetric, trained wording": (FaithfulnessMetric(), trained),
            "FaithfulnessMetric, DeepEval wording": (
                FaithfulnessMetric(wording="deepeval"),
                trained,
            ),
            "FaithfulnessMetric, DeepEval wording, untrained judge": (
                FaithfulnessMetric(wording="deepeval"),
                base,
            ),
        }
        found = {name: readings(m, cases, model) for name, (m, model) in runs.items()}
        shipped, _ = scores(load_metric(QUESTION), rows, trained)
        code = design(code_features(rows), human, docs, task)
        code_pred = out_of_fold(code.x, code.target, code.docs, code.binary, FOLDS)
        for name, (_, model) in runs.items():
            f = found[name]
            rows_out.append(
                [
                    task,
                    name,
                    model.name,
                    len(rows),
                    cell(auroc_of(f["expected"], human, groups)),
                    cell(auroc_of(f["score"], human, groups)),
                    round(float(f["calls"]), 2),
                    round(float(f["tokens"]), 1),
                ]
            )
        rows_out.append(
            [
                task,
                "shipped question (faithfulness.toml), P(Yes)",
                trained.name,
                len(rows),
                cell(auroc_of(shipped, human, groups)),
                None,
                1.0,
                None,
            ]
        )
        rows_out.append(
            [
                task,
                "n-gram code head (out of fold)",
                "-",
                len(rows),
                cell(auroc_of(code_pred, human, groups)),
                None,
                0.0,
                None,
            ]
        )
        best = found["FaithfulnessMetric, trained wording"]["expected"]
        for other, pred in (
            ("DeepEval wording", found["FaithfulnessMetric, DeepEval wording"]["expected"]),
            ("the shipped question", shipped),
            ("the code head", code_pred),
        ):
            d = paired(best, pred, human, groups)
            notes.append(
                f"{task}: trained wording minus {other}: {d.value:+.3f} [{d.low:+.2f}, "
                f"{d.high:+.2f}] AUROC (paired, same documents)"
            )
    write_figures(
        args,
        "rag_faithfulness",
        "FaithfulnessMetric against the human labels (dev halves), AUROC with 95% intervals "
        "over resampled documents",
        [
            "task",
            "reading",
            "judge",
            "cases",
            "AUROC (expected score)",
            "AUROC (DeepEval count)",
            "verdicts/case",
            "tokens evaluated/case",
        ],
        rows_out,
        notes=notes,
        models=[trained, base],
        settings={"tasks": args.task or list(TASKS)},
    )


def summarization(args: Any) -> None:
    rows = read_cases(DATA_DIR / "summeval.jsonl")
    keep = list(dict.fromkeys(document_of(r) for r in rows))[: args.docs]
    rows = [r for r in rows if document_of(r) in keep]
    docs = [document_of(r) for r in rows]
    groups = stats.doc_groups(docs)
    cases = [
        LLMTestCase(input=r.case.input, actual_output=r.case.actual_output, id=r.case_id)
        for r in rows
    ]
    model = resolve_model(BASE)
    f = readings(SummarizationMetric(), cases, model)
    out = []
    for label in ("consistency", "relevance"):
        human = np.asarray(labels_of(rows, f"labels.{label}", "summeval.jsonl"), dtype=float)
        for reading in ("expected", "score", "Alignment", "Coverage"):
            pred = f[reading]
            stat = stats.document_mean("spearman", pred, human, groups)
            mean, used, _ = stats.per_document("spearman", pred, human, groups)
            low, high = stats.bootstrap(stat, groups)
            out.append([label, reading, len(rows), used, {"value": mean, "low": low, "high": high}])
    write_figures(
        args,
        "rag_summarization",
        f"SummarizationMetric on SummEval's first {args.docs} documents: per-document Spearman "
        "with the expert ratings, 95% intervals over resampled documents",
        ["label", "reading", "cases", "documents", "Spearman (per document)"],
        out,
        notes=[
            f"judge {model.name}; {float(f['calls']):.1f} verdicts and "
            f"{float(f['tokens']):.0f} tokens evaluated a case",
            "expected: min of the two parts from the probabilities; score: DeepEval's count",
        ],
        models=[model],
        settings={"docs": args.docs},
    )


def answer_sentence(context: str, start: int) -> str:
    """The sentence of `context` holding the character at `start`."""
    at = 0
    for sentence in sentences(context):
        found = context.find(sentence, at)
        if found <= start < found + len(sentence):
            return sentence
        at = max(at, found)
    return sentences(context)[-1]


def qa_cases(path: Path, limit: int) -> list[tuple[LLMTestCase, LLMTestCase, str]]:
    """(relevant case, irrelevant case, paragraph id) for the first answerable question of
    each paragraph, in file order, the first `limit`."""
    data = json.loads(path.read_text())
    out = []
    for article in data["data"]:
        paragraphs = article["paragraphs"]
        firsts = []
        for p in paragraphs:
            q = next((q for q in p["qas"] if q.get("answers")), None)
            firsts.append(q)
        for k, (p, q) in enumerate(zip(paragraphs, firsts, strict=True)):
            if q is None:
                continue
            nxt = (k + 1) % len(paragraphs)
            other, other_q = paragraphs[nxt], firsts[nxt]
            if other_q is None or other is p:
                continue
            ans = q["answers"][0]
            right = answer_sentence(p["context"], ans["answer_start"])
            wrong = answer_sentence(other["context"], other_q["answers"][0]["answer_start"])
            pid = f"{article['title']}#{k}"
            good = LLMTestCase(
                input=q["question"],
                actual_output=right,
                expected_output=right,
                retrieval_context=[p["context"]],
                id=f"{q['id']}+",
            )
            bad = LLMTestCase(
                input=q["question"],
                actual_output=wrong,
                expected_output=right,
                retrieval_context=[other["context"]],
                id=f"{q['id']}-",
            )
            out.append((good, bad, pid))
    return out[:limit]


def qa(args: Any) -> None:
    triples = qa_cases(Path(args.squad), args.limit)
    cases = [c for good, bad, _ in triples for c in (good, bad)]
    docs = [pid for _, _, pid in triples for _ in range(2)]
    human = np.array([1.0, 0.0] * len(triples))
    groups = stats.doc_groups(docs)
    model, trained = resolve_model(BASE), resolve_model(TRAINED)
    out = []
    for metric in (
        ContextualPrecisionMetric(),
        ContextualPrecisionMetric(wording="deepeval"),
        ContextualRecallMetric(),
        ContextualRecallMetric(wording="deepeval"),
        ContextualRelevancyMetric(),
        AnswerRelevancyMetric(),
    ):
        judge = trained if metric.model == TRAINED else model
        f = readings(metric, cases, judge)
        out.append(
            [
                metric.name,
                f"{getattr(metric, 'wording', 'deepeval')} wording",
                judge.name,
                len(cases),
                cell(auroc_of(f["expected"], human, groups)),
                cell(auroc_of(f["score"], human, groups)),
                round(float(f["calls"]), 2),
                round(float(f["tokens"]), 1),
            ]
        )
    write_figures(
        args,
        "rag_qa",
        f"The contextual metrics and AnswerRelevancy on {len(triples)} SQuAD questions (a "
        "relevant and an irrelevant case each): AUROC, 95% intervals over resampled paragraphs",
        [
            "metric",
            "question",
            "judge",
            "cases",
            "AUROC (expected score)",
            "AUROC (DeepEval count)",
            "verdicts/case",
            "tokens evaluated/case",
        ],
        out,
        notes=[
            "trained wording: the faithfulness adapter's support question (a node is useful "
            "when it supports the expected output; an expected sentence is attributable when "
            "the nodes support it); deepeval wording: DeepEval's question, on the untrained judge",
            f"SQuAD 2.0 dev, the first five articles ({Path(args.squad).name}); the set is "
            "rebuilt by qa_cases() from that file",
            "precision and relevancy: the question's own paragraph against the next one; "
            "recall: the answer's sentence as the expected output; answer relevancy: the "
            "answer's sentence against the next paragraph's answer sentence",
        ],
        models=[model, trained],
        settings={"limit": args.limit},
    )


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument("which", choices=("faithfulness", "summarization", "qa"))
    p.add_argument("--task", action="append", choices=sorted(TASKS))
    p.add_argument("--docs", type=int, default=10, help="summarization: SummEval documents")
    p.add_argument("--squad", help="qa: a SQuAD-format JSON file")
    p.add_argument("--limit", type=int, default=80, help="qa: questions")
    add_out(p)
    args = p.parse_args()
    if args.which == "qa" and not args.squad:
        p.error("qa needs --squad FILE")
    {"faithfulness": faithfulness, "summarization": summarization, "qa": qa}[args.which](args)


if __name__ == "__main__":
    main()
