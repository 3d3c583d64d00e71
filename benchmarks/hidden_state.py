"""The judge's hidden state as a head's input: does it add to the readings a head already
combines (`benchmarks/heads.py`), and at what cost?

    python benchmarks/hidden_state.py --task qags_xsum     # also: summedits, summeval

For each case the judge reads the yes/no consistency question's prompt (the document, the
summary, the question: `benchmarks/metrics/consistency_yes_no.toml`) and we keep its last
hidden state where it would answer (`JudgeSession.hidden_state`: llama.cpp's embeddings from
the same exact evaluation whose logits give the verdict). Raw, its 576 dimensions overfit a
hundred labels, so it is reduced by a projection fitted without labels (principal components
of the training documents' states) before a head reads it. Every figure is out of fold
(`anvil_local.bench.fit`: documents dealt into 5 folds; the projection, the setting and the
head fitted on the other four); 95% intervals resample documents.

Figures: benchmarks/results/hidden_state_<task>.json.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
from harness import DATA_DIR, ROOT, SHIPPED_MODEL, add_out, write_figures
from heads import JUDGE, TASKS, cells, headline, readings, statistic

from anvil_local.bench import stats
from anvil_local.bench.fit import _predict, _splits, _usable, design, fit, out_of_fold
from anvil_local.bench.suite import document_of, labels_of
from anvil_local.judge.prompt import Prompt
from anvil_local.metrics.dag.metric import judgement_question
from anvil_local.metrics.layout import case_blocks
from anvil_local.models import open_session, resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric
from anvil_local.testcase import SingleTurnParams

QUESTION = ROOT / "benchmarks" / "metrics" / "consistency_yes_no.toml"
FOLDS = 5
#: Principal components kept (the head's setting is still chosen inside each fold).
COMPONENTS = (8, 32)


def hidden_states(rows: list, model: Any) -> tuple[np.ndarray, float, float]:
    """Each case's hidden state at the question's answer position, cold (no question asked
    before it); with the tokens evaluated and seconds per case."""
    node = load_metric(QUESTION).dag.root_nodes[0]
    question = judgement_question(node)
    params = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
    session = open_session(model)
    states, tokens, start = [], 0, time.perf_counter()
    for index, row in enumerate(rows):
        prompt = Prompt(case_blocks(row.case, params), question, row.case_id)
        found = session.hidden_state(prompt)
        states.append(found.state)
        tokens += found.usage.evaluated_tokens
        if (index + 1) % 50 == 0:
            print(f"hidden states: {index + 1}/{len(rows)}", flush=True)
    n = max(1, len(rows))
    return np.asarray(states), tokens / n, (time.perf_counter() - start) / n


def projected_out_of_fold(
    hidden: np.ndarray,
    readings_x: np.ndarray | None,
    target: np.ndarray,
    docs: list[str],
    binary: bool,
    components: int | None,
) -> np.ndarray:
    """Out-of-fold predictions of a head over the hidden state's principal components
    (fitted on the training folds' states, no labels), beside the readings when given;
    `components=None`: the raw state."""
    from sklearn.decomposition import PCA

    pred = np.full(len(target), np.nan)
    for train, test in _splits(docs, FOLDS):
        if not _usable(target[train], binary):
            continue
        if components is None:
            h_train, h_test = hidden[train], hidden[test]
        else:
            pca = PCA(n_components=components, random_state=0).fit(hidden[train])
            h_train, h_test = pca.transform(hidden[train]), pca.transform(hidden[test])
        if readings_x is not None:
            h_train = np.hstack([readings_x[train], h_train])
            h_test = np.hstack([readings_x[test], h_test])
        model, _ = fit(h_train, target[train], [docs[i] for i in train], binary)
        pred[test] = _predict(model, h_test, binary)
    return pred


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model_default=SHIPPED_MODEL, out=False)
    p.add_argument("--task", choices=sorted(TASKS), required=True)
    add_out(p)
    args = p.parse_args()
    data_name, label = TASKS[args.task]
    rows = read_cases(DATA_DIR / data_name)
    model = resolve_model(args.model)
    found, lines = readings(load_metric(JUDGE), rows, model)
    kept = {line.case_id for line in lines}
    rows = [r for r in rows if r.case_id in kept]
    human = labels_of(rows, label, data_name)
    docs = [document_of(r) for r in rows]
    d = design(found, human, docs, str(JUDGE))
    hidden, hidden_tokens, hidden_seconds = hidden_states(rows, model)
    binary = d.binary
    base = out_of_fold(d.x, d.target, d.docs, binary, FOLDS)
    variants = [("head over the readings (heads.py)", base, "readings")]
    variants.append(
        (
            "hidden state raw (576), alone",
            projected_out_of_fold(hidden, None, d.target, d.docs, binary, None),
            "hidden",
        )
    )
    for k in COMPONENTS:
        variants.append(
            (
                f"hidden state, {k} components, alone",
                projected_out_of_fold(hidden, None, d.target, d.docs, binary, k),
                "hidden",
            )
        )
        variants.append(
            (
                f"readings + hidden state, {k} components",
                projected_out_of_fold(hidden, d.x, d.target, d.docs, binary, k),
                "both",
            )
        )
    from anvil_local.bench.fit import _statistics

    readings_tokens = sum(x.result.usage.evaluated_tokens for x in lines) / max(1, len(lines))
    cost = {
        "readings": round(readings_tokens, 1),
        "hidden": round(hidden_tokens, 1),
        "both": round(readings_tokens + hidden_tokens, 1),
    }
    rows_out = [
        [title, *cells(_statistics(pred, d), binary), cost[c]] for title, pred, c in variants
    ]
    name = headline(binary)
    notes = [
        f"The hidden state read cold (no question asked before it): {hidden_seconds:.2f} s a "
        f"case, {hidden_tokens / hidden_seconds:.0f} tokens/s; llama.cpp computes the logits "
        "at every position while embeddings are on. After the question is asked on the same "
        "prompt it costs 2 tokens."
    ]
    for title, pred, kind in variants:
        if kind == "both":
            diff = stats.paired_difference(
                statistic(base, d), statistic(pred, d), d.docs, len(pred)
            )
            notes.append(f"{title} minus the readings' head, {name}: {diff.text()} (paired).")
    columns = (
        ["reads", "AUROC", "bal. acc. at 0.5", "bal. acc. (fitted cut)"]
        if binary
        else ["reads", "doc Spearman", "Spearman"]
    ) + ["tokens evaluated/case"]
    write_figures(
        args,
        f"hidden_state_{args.task}",
        f"{args.task}: the judge's hidden state as a head's input ({len(rows)} cases, "
        f"{len(set(docs))} documents, {model.name})",
        columns,
        rows_out,
        notes=notes,
        models=[model],
        settings={"folds": FOLDS, "label": label, "components": list(COMPONENTS)},
    )
    print(json.dumps(rows_out, default=str, indent=1))
    print("\n".join(notes))


if __name__ == "__main__":
    main()
