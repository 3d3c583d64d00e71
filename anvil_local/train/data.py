"""`anvil train data`: the training set, from pinned public sources to rendered token ids.

Steps, each counted per source so the report says what was kept and why the rest was not:
read the pinned files (bytes checked), clean the text, drop pairs whose document comes from
an evaluation set (hashed 8-grams, `overlap.py`), drop documents longer than the judge should
read, drop duplicates, add rule-made pairs from the kept documents, balance the labels per
source, cap each source, shuffle (seeded), hold a share out for validation, and render each
pair as the metric's own question.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from anvil_local.bench.perturb import make_attribute_cases, make_cases, make_extrinsic_cases
from anvil_local.errors import DataError
from anvil_local.testcase import LLMTestCase
from anvil_local.train.overlap import EvalOverlap
from anvil_local.train.render import Renderer
from anvil_local.train.sources import SOURCES, Pair, Source, case_pairs

log = logging.getLogger(__name__)

#: The schema of a training row; `anvil train lora` refuses rows of another.
ROW_VERSION = 1


@dataclass
class SourceCounts:
    read: int = 0
    overlap: int = 0
    too_long: int = 0
    duplicate: int = 0
    unbalanced: int = 0
    capped: int = 0
    kept: int = 0
    positive: int = 0


@dataclass
class BuildPlan:
    """What `anvil train data` was asked for."""

    sources_dir: Path | None
    sources: tuple[Source, ...] = SOURCES
    exclude: tuple[Path, ...] = ()
    per_source: int = 2000
    max_words: int = 300
    rules: bool = True
    holdout: float = 0.05
    seed: int = 0
    cases: tuple[Path, ...] = ()  # the user's own labelled cases, each a source
    label: str = "labels.consistent"
    counts: dict[str, SourceCounts] = field(default_factory=dict)
    #: rule-made pairs whose unsupported claim brings what the document lacks
    extrinsic: bool = False
    #: rule-made pairs whose unsupported claim adds one detail the document never states
    attributes: bool = False


def clean(text: str) -> str:
    """FEVER's and MultiNLI's tokenized text read as plain prose (spaces before punctuation,
    PTB brackets and quotes undone)."""
    for token, plain in (("-LRB-", "("), ("-RRB-", ")"), ("-LSB-", "["), ("-RSB-", "]")):
        text = text.replace(token, plain)
    text = text.replace("``", '"').replace("''", '"')
    text = re.sub(r"\s+([.,;:!?%)\]])", r"\1", text)
    text = re.sub(r"([(\[])\s+", r"\1", text)
    text = re.sub(r"\s+('s|n't|'re|'ve|'ll|'d|'m)\b", r"\1", text)
    return " ".join(text.split())


def _keyed(pair: Pair) -> str:
    return hashlib.sha256(f"{pair.document}\x00{pair.claim}".encode()).hexdigest()


def collect(plan: BuildPlan) -> list[Pair]:
    """The kept pairs of every source, balanced and capped, in a seeded order."""
    overlap = EvalOverlap.read(plan.exclude)
    rng = random.Random(plan.seed)
    seen: set[str] = set()
    by_source: dict[str, list[Pair]] = defaultdict(list)
    documents: dict[str, str] = {}  # document -> its first ref, for the rule-made pairs
    #: (name, pairs, whether its text is the public datasets' tokenized text to clean): a
    #: user's own cases are rendered as they are, line breaks included, as a run reads them
    readers: list[tuple[str, Iterable[Pair], bool]] = []
    for source in plan.sources:
        if plan.sources_dir is None:
            raise DataError(f"{source.name}: no --sources folder to read it from")
        source.check(plan.sources_dir)
        readers.append((source.name, source.pairs(plan.sources_dir), True))
    readers += [(path.stem, case_pairs(path, plan.label), False) for path in plan.cases]
    for name, pairs, public in readers:
        counts = plan.counts.setdefault(name, SourceCounts())
        verdicts: dict[str, bool] = {}
        for raw in pairs:
            counts.read += 1
            pair = raw
            if public:
                pair = replace(raw, document=clean(raw.document), claim=clean(raw.claim))
            if len(pair.document.split()) > plan.max_words:
                counts.too_long += 1
                continue
            if pair.document not in verdicts:
                verdicts[pair.document] = overlap.seen(pair.document)
            if verdicts[pair.document]:
                counts.overlap += 1
                continue
            key = _keyed(pair)
            if key in seen:
                counts.duplicate += 1
                continue
            seen.add(key)
            by_source[name].append(pair)
            if len(pair.document.split()) >= 40:
                documents.setdefault(pair.document, pair.ref)
    by_ref = sorted((ref, text) for text, ref in documents.items())
    made_by = {"rules": make_cases(by_ref, 1, plan.seed)} if plan.rules else {}
    if plan.extrinsic:
        made_by["extrinsic"] = make_extrinsic_cases(by_ref, plan.seed)
    if plan.attributes:
        made_by["attributes"] = make_attribute_cases(by_ref, plan.seed)
    for name, made in made_by.items():
        counts = plan.counts.setdefault(name, SourceCounts())
        for case in made:
            counts.read += 1
            ref = f"{case.doc}#{case.change or 'kept'}"
            pair = Pair(case.source, case.summary, bool(case.consistent), name, ref)
            key = _keyed(pair)
            if key in seen:
                counts.duplicate += 1
                continue
            seen.add(key)
            by_source[name].append(pair)
    kept: list[Pair] = []
    for name, pairs in by_source.items():
        counts = plan.counts[name]
        kept += _balance(pairs, plan.per_source, counts, rng)
    rng.shuffle(kept)
    return kept


def _balance(pairs: list[Pair], cap: int, counts: SourceCounts, rng: random.Random) -> list[Pair]:
    """As many supported as unsupported pairs (the larger side sampled down), at most `cap`."""
    yes = [p for p in pairs if p.supported]
    no = [p for p in pairs if not p.supported]
    side = min(len(yes), len(no), cap // 2)
    counts.unbalanced += len(pairs) - 2 * min(len(yes), len(no))
    counts.capped += 2 * (min(len(yes), len(no)) - side)
    chosen = rng.sample(yes, side) + rng.sample(no, side)
    counts.kept += len(chosen)
    counts.positive += side
    return chosen


def rows(
    pairs: Iterable[Pair], renderer: Renderer, plan: BuildPlan, metric_file: str
) -> Iterator[dict[str, Any]]:
    """Each pair as a JSONL row: provenance, the case, and the metric's question as tokens."""
    sources = {s.name: s for s in plan.sources}
    for number, pair in enumerate(pairs):
        case = LLMTestCase(input=pair.document, actual_output=pair.claim, id=f"t{number}")
        rendered = renderer.render(case)
        answer = _answer_index(rendered.options, pair.supported)
        source = sources.get(pair.source)
        split = "val" if _holdout(pair.document, plan.holdout) else "train"
        yield {
            "version": ROW_VERSION,
            "id": f"{pair.source}:{pair.ref}",
            "split": split,
            "source": pair.source,
            **_provenance(source, pair.source),
            "input": pair.document,
            "actual_output": pair.claim,
            "supported": pair.supported,
            "metric": metric_file,
            "tokens": rendered.tokens,
            "options": list(rendered.options),
            "option_tokens": rendered.option_tokens,
            "answer": answer,
        }


def _provenance(source: Source | None, name: str) -> dict[str, str]:
    if source is not None:
        return {"repo": source.repo, "commit": source.commit, "licence": source.licence}
    if name in ("rules", "extrinsic", "attributes"):
        return {
            "repo": "anvil-local (rules over the kept documents)",
            "commit": "",
            "licence": "as the document's source",
        }
    return {"repo": f"local cases ({name})", "commit": "", "licence": "the cases' own"}


def _answer_index(options: tuple[str, ...], supported: bool) -> int:
    """Which option is right: the metric's yes/no verdict options, read by their text."""
    lowered = [o.strip().lower() for o in options]
    wanted = "yes" if supported else "no"
    if wanted not in lowered:
        raise DataError(f"the training metric's options {list(options)} hold no {wanted!r}")
    return lowered.index(wanted)


def _holdout(document: str, share: float) -> bool:
    """A document's split, from its hash: every pair of one document lands on one side."""
    digest = int(hashlib.sha256(document.encode()).hexdigest()[:8], 16)
    return digest / 0xFFFFFFFF < share


def write_rows(
    path: Path, produced: Iterable[dict[str, Any]], progress: Callable[[int], None]
) -> int:
    """Write rows to `path` through a temporary file (an interrupted build leaves none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    count = 0
    with partial.open("w", encoding="utf-8") as handle:
        for row in produced:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
            progress(count)
    partial.replace(path)
    return count


def counts_table(plan: BuildPlan) -> list[str]:
    """The per-source counts as aligned text lines."""
    head = ("source", "read", "eval overlap", "too long", "duplicate", "unbalanced", "capped")
    lines = [" | ".join((*head, "kept", "supported"))]
    total = Counter()
    for name, c in plan.counts.items():
        values = (c.read, c.overlap, c.too_long, c.duplicate, c.unbalanced, c.capped, c.kept)
        total.update(dict(zip((*head[1:], "kept"), values, strict=True)))
        total["supported"] += c.positive
        lines.append(" | ".join([name, *(str(v) for v in values), str(c.positive)]))
    lines.append(" | ".join(["all", *(str(total[k]) for k in (*head[1:], "kept", "supported"))]))
    return lines
