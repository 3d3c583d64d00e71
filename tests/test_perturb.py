"""Labelled cases made by code (`anvil perturb`): each kind of change on a sentence that
allows it, faithful sentences copied verbatim, the same cases for the same seed."""

from __future__ import annotations

import json
import random
from pathlib import Path

from click.testing import CliRunner

from anvil_local.bench import perturb
from anvil_local.cli import main

DOC = (
    "The council met on Monday in Leeds. Mayor Ana Lopez said the budget rose by 12 percent "
    "this year. She will present it to residents in March. The plan was not approved by "
    "everyone on the council."
)
OTHER = "A new bridge opened in the north of the city. Traffic was light on the first day."


def test_sentences_keep_whole_sentences_of_a_useful_length():
    assert perturb.sentences(DOC) == [
        "The council met on Monday in Leeds.",
        "Mayor Ana Lopez said the budget rose by 12 percent this year.",
        "She will present it to residents in March.",
        "The plan was not approved by everyone on the council.",
    ]


def test_each_change_alters_one_checkable_thing():
    rng = random.Random(0)
    assert perturb._swap_number("It rose by 12 percent.", rng, ["7"]) == "It rose by 7 percent."
    assert perturb._swap_date("They met on Monday.", rng, []) not in (None, "They met on Monday.")
    assert perturb._swap_pronoun("She will present it.", rng, []) == "He will present it."
    assert perturb._negate("The plan was not approved.", rng, []) == "The plan was approved."
    assert perturb._negate("The plan was approved.", rng, []) == "The plan was not approved."
    swapped = perturb._swap_name("The mayor met Ana Lopez today.", rng, ["Bo Chen", "Ana Lopez"])
    assert swapped == "The mayor met Bo Chen today."
    assert perturb._swap_number("No digits here.", rng, []) is None


def test_made_cases_pair_faithful_and_changed_sentences_and_repeat_for_a_seed():
    made = perturb.make_cases([("a", DOC), ("b", OTHER)], per_document=1, seed=3)
    again = perturb.make_cases([("a", DOC), ("b", OTHER)], per_document=1, seed=3)
    assert made == again
    faithful = [m for m in made if m.consistent == 1]
    changed = [m for m in made if m.consistent == 0]
    assert len(faithful) == 2 and len(changed) == 2
    assert all(m.summary in m.source for m in faithful)  # a sentence of its own document
    assert all(m.summary not in m.source for m in changed)
    assert all(m.change in perturb.CHANGES for m in changed)


def test_anvil_perturb_writes_labelled_cases(tmp_path: Path):
    data = tmp_path / "docs.jsonl"
    rows = [
        {"id": "a", "doc": "a", "input": DOC, "actual_output": "x"},
        {"id": "b", "doc": "b", "input": OTHER, "actual_output": "y"},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "made.jsonl"
    result = CliRunner().invoke(
        main, ["perturb", "--data", str(data), "--out", str(out), "--per-doc", "1"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("wrote 4 cases from 2 documents")
    made = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(m["labels"]["consistent"] for m in made) == [0, 0, 1, 1]
    assert {m["doc"] for m in made} == {"a", "b"}


def _seeded_pairs(make, docs, other_seed):
    """The made cases of documents a and b (c, of two sentences, is left out), split into
    faithful and changed, after checking that a seed gives the same cases and another not."""
    made = make(docs, seed=0)
    assert made == make(docs, seed=0)
    assert made != make(docs, seed=other_seed)
    faithful = [m for m in made if m.consistent == 1]
    changed = [m for m in made if m.consistent == 0]
    assert {m.doc for m in faithful} == {m.doc for m in changed} == {"a", "b"}
    assert all(m.summary in m.source for m in faithful)
    return faithful, changed


def test_extrinsic_cases_bring_what_the_document_lacks():
    third = (
        "Storms hit the coast overnight near Exeter. Police said Officer Tom Brown closed "
        "three roads. About 200 homes lost power for six hours."
    )
    docs = [("a", DOC), ("b", third), ("c", OTHER)]
    _, changed = _seeded_pairs(perturb.make_extrinsic_cases, docs, other_seed=1)
    for m in changed:
        assert m.change in perturb.EXTRINSIC and m.summary not in m.source
        text = dict(docs)[m.doc]
        if m.change == "removed_sentence":  # the sentence is the document's, taken out of it
            assert m.summary in text and len(m.source) < len(text)
        else:  # a name or number the document does not state
            assert m.source == text
            new = set(m.summary.split()) - set(text.split())
            assert new and not any(word in text for word in new)


def test_attribute_cases_add_one_detail_the_document_never_states():
    news = (
        "A man was arrested after a fire at the company's warehouse. Firefighters said the "
        "blaze started overnight. Chief officer Sam Reed said no one was hurt. The road was "
        "closed for several hours."
    )
    docs = [("a", DOC), ("b", news), ("c", OTHER)]
    faithful, changed = _seeded_pairs(perturb.make_attribute_cases, docs, other_seed=5)
    assert len(faithful) == len(changed) and len(changed) <= 4  # two pairs a document at most
    assert not {m.summary for m in faithful} & {m.summary for m in changed}
    for m in changed:
        assert m.change in perturb.ATTRIBUTES and m.source == dict(docs)[m.doc]
        words = m.source.replace(".", " ").split()
        added = [w for w in m.summary.rstrip(".").replace(",", "").split() if w not in words]
        assert added, m.summary  # something was added ...
        assert all(w.lower() not in m.source.lower().split() for w in added)  # ... and is new
        # and the rest of the sentence is one of the document's, word for word
        assert any(
            [w for w in m.summary.replace(",", "").split() if w not in added]
            == s.replace(",", "").split()
            for s in perturb.sentences(m.source)
        ), m.summary


def test_each_attribute_applies_where_it_fits():
    rng = random.Random(0)
    words = {"the", "man"}
    aged = perturb._add_age("A man was hurt in the crash.", rng, words)
    assert aged is not None and aged.endswith("-year-old man was hurt in the crash.")
    assert perturb._add_age("Ann Lee said it was late.", rng, words) is not None
    assert perturb._add_age("The bridge was closed.", rng, words) is None
    titled = perturb._add_title("On Friday, Ann Lee said it was late.", rng, words)
    assert titled is not None and titled.startswith("On Friday, ") and "Ann Lee said" in titled
    assert perturb._add_title("The film Reign Over Me is a drama.", rng, words) is None
    grouped = perturb._add_group("The club signed a striker.", rng, words)
    assert grouped is not None and grouped.endswith(" club signed a striker.")
    placed = perturb._add_setting("Police said the road was closed.", rng, words)
    assert placed is not None and placed.startswith("Police said the road was closed ")
    assert perturb._add_setting("Paris is a city in France.", rng, words) is None  # a definition
    # nothing the document already holds is added
    assert perturb._add_setting("Police said the road was closed.", rng, _every_setting()) is None


def _every_setting() -> set[str]:
    return {w.casefold() for s in perturb._SETTINGS for w in s.split()[1:]}
