"""Build the pairwise SummEval set: two summaries of one article, as an arena of two
contestants, labelled with the one the experts preferred.

From the SummEval dev half (`benchmarks/data/summeval.jsonl`, 50 articles x 16 systems): a
summary's expert score is the mean of its four expert ratings (coherence, consistency,
fluency, relevance); a pair is two summaries of one article whose scores differ by at least
`--gap` (1.0 by default, so the preference is clear); each article gives `--per-doc` pairs
(2), drawn with a fixed seed, and which summary is shown first is a fixed-seed coin flip, so
the preferred one is first about half the time. Contestants are named after their systems;
`labels.preferred` names the preferred one and `doc` the article, so a bench resamples whole
articles.

    python benchmarks/summeval_pairs.py            # writes benchmarks/data/summeval_pairs.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
SEED = 20261203


def expert_score(case: dict) -> float:
    return sum(case["labels"][d] for d in DIMENSIONS) / len(DIMENSIONS)


def build(cases: list[dict], gap: float, per_doc: int, seed: int) -> list[dict]:
    """The pairs, article by article in file order."""
    rng = random.Random(seed)
    by_doc: dict[str, list[dict]] = {}
    for case in cases:
        by_doc.setdefault(case["doc"], []).append(case)
    pairs = []
    for doc, summaries in by_doc.items():
        summaries = sorted(summaries, key=lambda c: c["id"])
        candidates = [
            (a, b)
            for a, b in itertools.combinations(summaries, 2)
            if abs(expert_score(a) - expert_score(b)) >= gap
        ]
        rng.shuffle(candidates)
        for a, b in candidates[:per_doc]:
            if rng.random() < 0.5:
                a, b = b, a
            better = a if expert_score(a) > expert_score(b) else b
            pairs.append(
                {
                    "id": f"{a['id']}~{b['id'].split('-')[-1]}",
                    "doc": doc,
                    "contestants": [_contestant(a), _contestant(b)],
                    "labels": {
                        "preferred": _system(better),
                        "gap": round(abs(expert_score(a) - expert_score(b)), 3),
                    },
                }
            )
    return pairs


def _system(case: dict) -> str:
    return case["id"].split("-")[-1]


def _contestant(case: dict) -> dict:
    return {
        "name": _system(case),
        "test_case": {"input": case["input"], "actual_output": case["actual_output"]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA / "summeval.jsonl")
    parser.add_argument("--out", type=Path, default=DATA / "summeval_pairs.jsonl")
    parser.add_argument("--gap", type=float, default=1.0)
    parser.add_argument("--per-doc", type=int, default=2)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    cases = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()]
    pairs = build(cases, args.gap, args.per_doc, args.seed)
    with args.out.open("w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(pair, ensure_ascii=False) + "\n")
    first = sum(p["labels"]["preferred"] == p["contestants"][0]["name"] for p in pairs)
    docs = len({p["doc"] for p in pairs})
    print(f"wrote {len(pairs)} pairs of {docs} articles to {args.out}; preferred first: {first}")


if __name__ == "__main__":
    main()
