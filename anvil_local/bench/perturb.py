"""Labelled cases made by code from unlabelled documents (the FactCC recipe, Kryscinski et al.
2020): a sentence of a document as a faithful "summary" of it (label 1), and the same sentence
changed in one checkable way as an unfaithful one (label 0): a number, a date word, a name or
a pronoun swapped for another, a negation added or removed, or a sentence of another document.

A head fitted on these (`anvil fit`) needs no human label; how it does against the same head
fitted on human labels is the question `benchmarks/agreement.md` answers. Every choice is drawn
from a seeded generator over the documents in file order, so the same documents give the same
cases on every run.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

#: Kinds of change, in the order tried for a sentence.
CHANGES = ("number", "date", "name", "pronoun", "negation", "other_document")

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])|(?<=\s\.)\s+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w.])")
_DATES = (
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    (
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ),
)
_PRONOUNS = {
    "he": "she",
    "she": "he",
    "his": "her",
    "him": "her",
    "her": "his",
    "they": "he",
    "their": "his",
}
_AUXILIARIES = (
    "is",
    "was",
    "are",
    "were",
    "has",
    "have",
    "had",
    "will",
    "would",
    "can",
    "could",
    "should",
    "did",
    "does",
)
_NAME = re.compile(r"(?<=[a-z,;] )([A-Z][a-z]+(?: [A-Z][a-z]+)*)")


@dataclass(frozen=True)
class Made:
    """One made case: the document, the sentence given as its summary, the label, and what
    was changed ("" for a faithful sentence)."""

    doc: str
    source: str
    summary: str
    consistent: int
    change: str

    def to_row(self, number: int) -> dict[str, object]:
        return {
            "id": f"{self.doc}-made-{number}",
            "doc": self.doc,
            "input": self.source,
            "actual_output": self.summary,
            "labels": {"consistent": self.consistent},
            "change": self.change or "none",
        }


def sentences(text: str, shortest: int = 6, longest: int = 60) -> list[str]:
    """The document's sentences of `shortest` to `longest` words."""
    found = [s.strip() for s in _SENTENCE.split(text.replace("\n", " "))]
    return [s for s in found if shortest <= len(s.split()) <= longest]


def _swap_number(sentence: str, rng: random.Random, others: Sequence[str]) -> str | None:
    numbers = list(_NUMBER.finditer(sentence))
    if not numbers:
        return None
    target = rng.choice(numbers)
    old = target.group(0)
    candidates = [n for n in others if n != old]
    if candidates:
        new = rng.choice(candidates)
    else:
        digits = old.replace(",", "")
        value = float(digits) if "." in digits else int(digits)
        new = str(value + rng.choice((-3, -2, 2, 3, 7)) if isinstance(value, int) else value * 2)
    return sentence[: target.start()] + new + sentence[target.end() :]


def _swap_word(sentence: str, rng: random.Random, group: Sequence[str]) -> str | None:
    words = [m for m in re.finditer(r"\b\w+\b", sentence) if m.group(0).casefold() in group]
    if not words:
        return None
    target = rng.choice(words)
    old = target.group(0)
    new = rng.choice([w for w in group if w != old.casefold()])
    if old[0].isupper():
        new = new.capitalize()
    return sentence[: target.start()] + new + sentence[target.end() :]


def _swap_date(sentence: str, rng: random.Random, _: Sequence[str]) -> str | None:
    for group in _DATES:
        changed = _swap_word(sentence, rng, group)
        if changed is not None:
            return changed
    return None


def _swap_name(sentence: str, rng: random.Random, names: Sequence[str]) -> str | None:
    found = list(_NAME.finditer(sentence))
    if not found:
        return None
    target = rng.choice(found)
    candidates = [n for n in names if n != target.group(1) and n not in sentence]
    if not candidates:
        return None
    return sentence[: target.start(1)] + rng.choice(candidates) + sentence[target.end(1) :]


def _swap_pronoun(sentence: str, rng: random.Random, _: Sequence[str]) -> str | None:
    words = [m for m in re.finditer(r"\b\w+\b", sentence) if m.group(0).casefold() in _PRONOUNS]
    if not words:
        return None
    target = rng.choice(words)
    old = target.group(0)
    new = _PRONOUNS[old.casefold()]
    if old[0].isupper():
        new = new.capitalize()
    return sentence[: target.start()] + new + sentence[target.end() :]


def _negate(sentence: str, rng: random.Random, _: Sequence[str]) -> str | None:
    removed = re.sub(r"\b(\w+) not\b", r"\1", sentence, count=1)
    if removed != sentence:
        return removed
    removed = re.sub(r"n't\b", "", sentence, count=1)
    if removed != sentence:
        return removed
    pattern = r"\b(" + "|".join(_AUXILIARIES) + r")\b"
    found = list(re.finditer(pattern, sentence, flags=re.IGNORECASE))
    if not found:
        return None
    target = rng.choice(found)
    return sentence[: target.end()] + " not" + sentence[target.end() :]


_CHANGERS: dict[str, Callable[[str, random.Random, Sequence[str]], str | None]] = {
    "number": _swap_number,
    "date": _swap_date,
    "name": _swap_name,
    "pronoun": _swap_pronoun,
    "negation": _negate,
}


def make_cases(
    documents: Iterable[tuple[str, str]], per_document: int = 2, seed: int = 0
) -> list[Made]:
    """For each (doc id, text): `per_document` faithful sentences and as many changed ones
    (each changed in the first way that applies to it, in a seeded shuffle of the changes
    within a sentence; failing all, a sentence of the next document)."""
    docs = [(doc, text, sentences(text)) for doc, text in documents]
    docs = [d for d in docs if d[2]]
    rng = random.Random(seed)
    made: list[Made] = []
    for position, (doc, text, found) in enumerate(docs):
        numbers = [m.group(0) for m in _NUMBER.finditer(text)]
        names = sorted({m.group(1) for m in _NAME.finditer(text)})
        picked = rng.sample(found, min(len(found), 2 * per_document))
        for sentence in picked[:per_document]:
            made.append(Made(doc, text, sentence, 1, ""))
        for sentence in picked[per_document:]:
            changes = [c for c in CHANGES if c != "other_document"]
            rng.shuffle(changes)
            changes.append("other_document")  # when no change applies within the sentence
            for change in changes:
                if change == "other_document":
                    if len(docs) < 2:
                        continue
                    other = docs[(position + 1) % len(docs)][2]
                    made.append(Made(doc, text, rng.choice(other), 0, change))
                    break
                pool = numbers if change == "number" else names
                changed = _CHANGERS[change](sentence, rng, pool)
                if changed is not None and changed != sentence:
                    made.append(Made(doc, text, changed, 0, change))
                    break
    return made


#: Kinds of extrinsic change, tried in a seeded order for each document.
EXTRINSIC = ("outside_name", "outside_number", "removed_sentence")


def make_extrinsic_cases(documents: Iterable[tuple[str, str]], seed: int = 0) -> list[Made]:
    """For each (doc id, text) with three or more sentences: one of its sentences as a
    faithful summary, and another one made unsupported by what the document lacks (most of
    XSum's errors are extrinsic, Maynez et al. 2020): a name taken from another document, a
    number the document never states, or the sentence itself taken out of the document (the
    case's source is then the document without it). Seeded, in file order."""
    docs = [(doc, text, sentences(text)) for doc, text in documents]
    docs = [d for d in docs if len(d[2]) >= 3]
    names_of = [sorted({m.group(1) for m in _NAME.finditer(text)}) for _, text, _ in docs]
    rng = random.Random(f"extrinsic:{seed}")  # not make_cases' draws: other sentences
    made: list[Made] = []
    for position, (doc, text, found) in enumerate(docs):
        kept, changed = rng.sample(found, 2)
        made.append(Made(doc, text, kept, 1, ""))
        outside = [n for n in names_of[(position + 1) % len(docs)] if n not in text]
        kinds = list(EXTRINSIC)
        rng.shuffle(kinds)
        for kind in kinds:
            if kind == "removed_sentence":
                rest = [s.strip() for s in _SENTENCE.split(text.replace("\n", " "))]
                source = " ".join(s for s in rest if s and s != changed)
                if changed not in source:
                    made.append(Made(doc, source, changed, 0, kind))
                    break
                continue
            if kind == "outside_name":
                claim = _swap_name(changed, rng, outside)
            else:
                claim = _swap_number(changed, rng, ())
            if claim is not None and claim != changed and not _stated(claim, text, kind):
                made.append(Made(doc, text, claim, 0, kind))
                break
    return made


def _stated(claim: str, text: str, kind: str) -> bool:
    """Whether every name (or number) of the changed claim is in the document after all."""
    pattern = _NAME if kind == "outside_name" else _NUMBER
    return all(m.group(0) in text for m in pattern.finditer(claim))


#: Kinds of added attribute: the first three in a seeded order for each sentence, the place or
#: time (the last) only where none of them applies.
ATTRIBUTES = ("age", "title", "group", "setting")

_PERSON = re.compile(
    r"\b([Aa]n?|[Tt]he) (man|woman|boy|girl|teenager|driver|pensioner|mother|father|student|"
    r"pedestrian|cyclist|motorcyclist|soldier|officer|patient|victim|worker|player|"
    r"singer|actor|actress|writer|doctor|teacher|farmer|businessman)\b"
)
_BODY = re.compile(
    r"\b([Tt]he) (company|firm|club|team|government|council|group|party|bank|charity|"
    r"hospital|school|university|band|airline|retailer|court|side|network|agency)\b"
)
_TITLES = (
    "former",
    "veteran",
    "Labour MP",
    "Conservative MP",
    "chief executive",
    "US",
    "Scottish",
    "British",
    "Irish",
    "Welsh",
    "French",
    "coach",
    "captain",
    "Dr",
    "world number three",
    "Olympic champion",
)
_BODY_WORDS = (
    "French",
    "Swiss",
    "Glasgow-based",
    "state-owned",
    "family-run",
    "struggling",
    "Championship",
    "Premier League",
    "Belfast-based",
    "Chinese",
    "US-based",
    "private",
)
_SETTINGS = (
    "in London",
    "in Cardiff",
    "in Glasgow",
    "in Manchester",
    "in Belfast",
    "in Paris",
    "in Sydney",
    "on Monday",
    "on Tuesday",
    "on Thursday",
    "on Saturday",
    "last year",
    "in 2015",
)
#: a person's name as the subject of a sentence, where a title or an age may go: two or more
#: capitalised words, not led by an article or a pronoun, before a verb people do
_SUBJECT = re.compile(
    r"(?<![\w-])(?!(?:The|A|An|In|On|At|He|She|It|They|This|But|And|After|When)\b)"
    r"([A-Z][a-z]+(?: [A-Z][a-z]+)+)(?= (?:said|says|told|won|scored|added|became|died|joined|"
    r"wrote|played|starred|directed|denied|claimed|announced|resigned|admitted|was born|"
    r"is an? (?:[A-Z][a-z]+ )?(?:actor|actress|singer|writer|director|footballer|player|"
    r"politician|musician|rapper|comedian|author|journalist|producer|businessman))\b)"
)
#: a sentence that tells of an event (a place or time may be added to it), not a definition
_EVENT = re.compile(r"\b(?:was|were|had|said|told|\w{3,}ed)\b")
_DEFINITION = re.compile(r"\b(?:is|are) (?:an?|the|one)\b")


def make_attribute_cases(
    documents: Iterable[tuple[str, str]], seed: int = 0, per_document: int = 2
) -> list[Made]:
    """For each (doc id, text) with three or more sentences: one of its sentences as a
    faithful summary, and another one kept whole with one detail the document never states
    added to it: an age ("a 34-year-old man", "Ann Lee, 34,"), a title or rank before a name
    ("former captain"), a description of a company or club ("the Swiss firm"), or a place or
    time ("in Cardiff", "on Monday"). XSum's unfaithful summaries the shipped judge trusts
    most are of this kind: the document's event, with one attribute it lacks. Up to
    `per_document` such pairs a document, each faithful sentence another than the changed
    ones. Seeded, in file order; an addition whose words the document holds is not made."""
    docs = [(doc, text, sentences(text)) for doc, text in documents]
    docs = [d for d in docs if len(d[2]) >= 3]
    rng = random.Random(f"attributes:{seed}")  # not the other rules' draws
    made: list[Made] = []
    for doc, text, found in docs:
        words = {w.casefold() for w in re.findall(r"[\w-]+", text)}
        order = rng.sample(found, len(found))
        changed: dict[str, tuple[str, str]] = {}  # sentence -> (claim, kind)
        for kinds in (ATTRIBUTES[:-1], ATTRIBUTES[-1:]):  # a place or time only failing all
            for sentence in order:
                if len(changed) == per_document:
                    break
                for kind in rng.sample(kinds, len(kinds)):
                    claim = _ADDERS[kind](sentence, rng, words) if sentence not in changed else None
                    if claim is not None and claim != sentence:
                        changed[sentence] = (claim, kind)
                        break
        faithful = [s for s in reversed(order) if s not in changed]
        for (claim, kind), kept in zip(changed.values(), faithful, strict=False):
            made.append(Made(doc, text, kept, 1, ""))
            made.append(Made(doc, text, claim, 0, kind))
    return made


def _new(addition: str, words: set[str]) -> bool:
    """Whether no word of `addition` is in the document (its words, casefolded)."""
    return not any(w.casefold() in words for w in re.findall(r"[\w-]+", addition))


def _add_age(sentence: str, rng: random.Random, words: set[str]) -> str | None:
    ages = [a for a in range(17, 80) if str(a) not in words]
    if not ages:
        return None
    age = rng.choice(ages)
    person = _PERSON.search(sentence)
    if person is not None:
        article = person.group(1)
        if article.casefold() in ("a", "an"):
            article = "an" if str(age).startswith("8") or age == 18 else "a"
            if person.group(1)[0].isupper():
                article = article.capitalize()
        adjective = f"{age}-year-old"
        before, after = sentence[: person.start()], sentence[person.end() :]
        return f"{before}{article} {adjective} {person.group(2)}{after}"
    names = _subjects(sentence)
    if not names:
        return None
    return f"{sentence[: names[0].end(1)]}, {age},{sentence[names[0].end(1) :]}"


def _subjects(sentence: str) -> list[re.Match[str]]:
    """Names of two or more words before a verb people do, not after another capitalised
    word (a title's middle) nor before "by" (a film directed by someone): a person, in most."""
    found = []
    for name in _SUBJECT.finditer(sentence):
        before = sentence[: name.start()].split()
        inside_title = bool(before) and before[-1][:1].isupper() and before[-1][-1:].isalpha()
        if not inside_title and not re.match(r" \S+ by", sentence[name.end() :]):
            found.append(name)
    return found


def _add_title(sentence: str, rng: random.Random, words: set[str]) -> str | None:
    names = _subjects(sentence)
    titles = [t for t in _TITLES if _new(t, words)]
    if not names or not titles:
        return None
    name = rng.choice(names)
    return f"{sentence[: name.start(1)]}{rng.choice(titles)} {sentence[name.start(1) :]}"


def _add_group(sentence: str, rng: random.Random, words: set[str]) -> str | None:
    body = _BODY.search(sentence)
    described = [d for d in _BODY_WORDS if _new(d, words)]
    if body is None or not described:
        return None
    return f"{sentence[: body.start(2)]}{rng.choice(described)} {sentence[body.start(2) :]}"


def _add_setting(sentence: str, rng: random.Random, words: set[str]) -> str | None:
    settings = [s for s in _SETTINGS if _new(s.split(" ", 1)[1], words)]
    if not settings or sentence[-1:] not in (".", "!", "?") or sentence.endswith('."'):
        return None
    if not _EVENT.search(sentence) or _DEFINITION.search(sentence):
        return None
    return f"{sentence[:-1]} {rng.choice(settings)}{sentence[-1]}"


_ADDERS: dict[str, Callable[[str, random.Random, set[str]], str | None]] = {
    "age": _add_age,
    "title": _add_title,
    "group": _add_group,
    "setting": _add_setting,
}
