"""Published agreement figures to read a bench beside (data, not code).

SummEval: summary-level Spearman computed per document over its 16 summaries and averaged
(the G-Eval paper, Liu et al. 2023, table 1). SummEdits: balanced accuracy (Laban et al.
2023). These are other judges on the full datasets, not runs of this tool.
"""

from __future__ import annotations

from pathlib import Path

#: dataset (matched against the data file's name) -> label -> [(judge, statistic, value)]
PUBLISHED: dict[str, dict[str, list[tuple[str, str, float]]]] = {
    "summeval": {
        "coherence": [
            ("G-Eval GPT-4", "doc_spearman", 0.582),
            ("G-Eval GPT-3.5", "doc_spearman", 0.440),
            ("UniEval", "doc_spearman", 0.575),
            ("ROUGE-1", "doc_spearman", 0.167),
        ],
        "consistency": [
            ("G-Eval GPT-4", "doc_spearman", 0.507),
            ("G-Eval GPT-3.5", "doc_spearman", 0.386),
            ("UniEval", "doc_spearman", 0.446),
            ("ROUGE-1", "doc_spearman", 0.160),
        ],
        "fluency": [
            ("G-Eval GPT-4", "doc_spearman", 0.506),
            ("G-Eval GPT-3.5", "doc_spearman", 0.424),
            ("UniEval", "doc_spearman", 0.449),
            ("ROUGE-1", "doc_spearman", 0.115),
        ],
        "relevance": [
            ("G-Eval GPT-4", "doc_spearman", 0.547),
            ("G-Eval GPT-3.5", "doc_spearman", 0.385),
            ("UniEval", "doc_spearman", 0.426),
            ("ROUGE-1", "doc_spearman", 0.326),
        ],
    },
    "summedits": {
        "consistent": [
            ("humans", "balanced_accuracy", 0.909),
            ("GPT-4", "balanced_accuracy", 0.821),
            ("Mistral-7B", "balanced_accuracy", 0.578),
            ("Llama-2-7B", "balanced_accuracy", 0.504),
        ],
    },
}


def published(label: str, data: str) -> list[tuple[str, str, float]]:
    """Published figures for `label` on the dataset the data file is named after."""
    name = Path(data).name.lower()
    for dataset, labels in PUBLISHED.items():
        if dataset in name:
            return labels.get(label, [])
    return []
