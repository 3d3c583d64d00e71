"""`anvil train data` without a model: sources pinned by sha256, evaluation documents kept
out, labels balanced, a document's pairs on one side of the split, the user's own cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anvil_local.errors import DataError
from anvil_local.train.data import BuildPlan, clean, collect, counts_table
from anvil_local.train.overlap import EvalOverlap, grams
from anvil_local.train.sources import SOURCES, Source, SourceFile, case_pairs, file_sha256

ROOT = Path(__file__).resolve().parent.parent
NGRAMS = ROOT / "benchmarks" / "data" / "eval_ngrams.txt"


def test_every_evaluation_document_is_seen_by_the_shipped_ngram_list():
    seen = EvalOverlap.read([NGRAMS])
    for name in ("qags_xsum.jsonl", "summedits_news.jsonl"):
        rows = [json.loads(line) for line in (ROOT / "benchmarks" / "data" / name).open()]
        assert all(seen.seen(row["input"]) for row in rows), name
    assert not seen.seen("A cat sat on the mat and then it went to sleep in the warm sun all day.")


def test_overlap_ignores_case_and_punctuation():
    text = "The quick brown fox jumps over the lazy dog near the river bank today again."
    seen = EvalOverlap(grams(text))
    assert seen.seen(text.upper().replace(" ", " , "))
    assert seen.hits("the quick brown fox") == 0  # fewer than 8 words: no 8-gram


def test_overlap_from_cases_file(tmp_path: Path):
    document = "one two three four five six seven eight nine ten eleven twelve thirteen"
    cases = tmp_path / "eval.jsonl"
    cases.write_text(json.dumps({"input": document, "actual_output": "x"}) + "\n")
    assert EvalOverlap.read([cases]).seen(document)
    with pytest.raises(DataError, match="no such file"):
        EvalOverlap.read([tmp_path / "missing.txt"])


def test_clean_undoes_fever_tokenization():
    raw = "Robert Palmer -LRB- writer -RRB- , born in 1945 , was `` great '' . He is n't ."
    assert clean(raw) == 'Robert Palmer (writer), born in 1945, was " great ". He isn\'t.'


def _docnli_source(tmp_path: Path, lines: list[str], name: str = "toy") -> Source:
    folder = tmp_path / "sources" / "Toy"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.txt"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return Source(
        name=name,
        repo="someone/toy",
        commit="0" * 40,
        folder="Toy",
        files=(SourceFile(f"{name}.txt", file_sha256(path)),),
        licence="MIT",
        about="toy pairs",
    )


def test_source_bytes_are_checked(tmp_path: Path):
    source = _docnli_source(tmp_path, ["entailment\tA b c.\tA b."])
    (tmp_path / "sources" / "Toy" / "toy.txt").write_text("changed\n")
    with pytest.raises(DataError, match="the recipe pins"):
        source.check(tmp_path / "sources")
    with pytest.raises(DataError, match="is missing"):
        source.check(tmp_path / "elsewhere")


def test_pinned_sources_name_repository_commit_and_licence():
    for source in SOURCES:
        assert "/" in source.repo and len(source.commit) == 40 and source.licence
        assert all(len(f.sha256) == 64 for f in source.files)


def _plan(tmp_path: Path, sources: tuple[Source, ...], **kwargs) -> BuildPlan:
    return BuildPlan(tmp_path / "sources", sources, rules=False, **kwargs)


def test_collect_balances_dedupes_and_drops_evaluation_documents(tmp_path: Path):
    evaluation = "the match ended in a draw after the home side scored late in the second half"
    lines = [
        f"entailment\tDocument {i} says the sky was blue on day {i}.\tThe sky was blue."
        for i in range(6)
    ]
    lines += [
        f"not_entailment\tDocument {i} says it rained on day {i}.\tIt was dry." for i in range(3)
    ]
    lines += [lines[0]]  # a duplicate
    lines += [f"not_entailment\t{evaluation}\tThe home side lost."]
    lines += ["neutral\tunknown label\tdropped", "no tabs here"]
    source = _docnli_source(tmp_path, lines)
    plan = _plan(tmp_path, (source,), exclude=(), per_source=100)
    plan_excluding = _plan(tmp_path, (source,), per_source=100)
    plan_excluding.exclude = ()
    seen = tmp_path / "eval.txt"
    seen.write_text("\n".join(sorted(grams(evaluation))))
    plan_excluding.exclude = (seen,)
    pairs = collect(plan_excluding)
    counts = plan_excluding.counts["toy"]
    assert counts.read == 11 and counts.duplicate == 1 and counts.overlap == 1
    assert sum(p.supported for p in pairs) == sum(not p.supported for p in pairs) == 3
    assert counts.kept == 6 and counts.unbalanced == 3
    assert all(evaluation not in p.document for p in pairs)
    assert collect(plan) is not None and plan.counts["toy"].overlap == 0
    assert counts_table(plan_excluding)[-1].split(" | ")[-2:] == ["6", "3"]


def test_collect_caps_each_source_and_is_seeded(tmp_path: Path):
    lines = [f"entailment\tPremise {i} is here.\tClaim {i}." for i in range(20)]
    lines += [f"not_entailment\tPremise {i} is there.\tClaim {i}." for i in range(20)]
    source = _docnli_source(tmp_path, lines)
    first = collect(_plan(tmp_path, (source,), per_source=8))
    again = collect(_plan(tmp_path, (source,), per_source=8))
    other = collect(_plan(tmp_path, (source,), per_source=8, seed=1))
    assert len(first) == 8 and sum(p.supported for p in first) == 4
    assert first == again and first != other


def test_rule_made_pairs_come_from_kept_documents(tmp_path: Path):
    document = (
        "The council approved 12 new homes on Monday. Residents had asked for 40 homes. "
        "John Smith said the plan was late. Mary Jones said it was fair to all of them. "
        "The work will start in March next year and will take about two years to finish."
    )
    lines = [
        f"entailment\t{document}\tThe council approved homes.",
        f"not_entailment\t{document}\tThe council rejected the homes.",
    ]
    source = _docnli_source(tmp_path, lines)
    plan = BuildPlan(tmp_path / "sources", (source,), per_source=100)
    pairs = collect(plan)
    rules = [p for p in pairs if p.source == "rules"]
    assert {p.supported for p in rules} == {True, False}
    assert all(p.document == document for p in rules)
    assert plan.counts["rules"].kept == 2
    assert "extrinsic" not in plan.counts  # only when asked for
    asked = BuildPlan(tmp_path / "sources", (source,), per_source=100, extrinsic=True)
    extrinsic = [p for p in collect(asked) if p.source == "extrinsic"]
    assert {p.supported for p in extrinsic} == {True, False}
    assert asked.counts["extrinsic"].kept == 2
    again = [p for p in collect(asked) if p.source == "rules"]
    assert sorted(again, key=str) == sorted(rules, key=str)  # the rules unchanged
    assert "attributes" not in asked.counts
    added = BuildPlan(tmp_path / "sources", (source,), per_source=100, attributes=True)
    attributes = [p for p in collect(added) if p.source == "attributes"]
    assert {p.supported for p in attributes} == {True, False}
    assert all(p.document == document for p in attributes)


def test_users_own_cases_are_a_source(tmp_path: Path):
    cases = tmp_path / "mine.jsonl"
    rows = [
        {
            "input": "The shop opens at nine.",
            "actual_output": "It opens at nine.",
            "labels": {"consistent": 1},
        },
        {
            "input": "The shop opens at nine.",
            "actual_output": "It opens at ten.",
            "labels": {"consistent": 0},
        },
        {
            "input": "The bus was late.",
            "actual_output": "The bus was late.",
            "labels": {"consistent": 0.67},
        },
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pairs = list(case_pairs(cases, "labels.consistent"))
    assert [p.supported for p in pairs] == [True, False, True]
    plan = BuildPlan(None, (), rules=False, cases=(cases,), per_source=10)
    kept = collect(plan)
    assert len(kept) == 2 and plan.counts["mine"].read == 3
    cases.write_text(
        json.dumps({"input": "a", "actual_output": "b", "labels": {"consistent": "yes"}}) + "\n"
    )
    with pytest.raises(DataError, match=r"mine.jsonl:1: labels.consistent is 'yes'"):
        list(case_pairs(cases, "labels.consistent"))
    with pytest.raises(DataError, match="no --sources folder"):
        collect(BuildPlan(None, SOURCES[:1]))


def test_users_own_cases_keep_their_text_as_a_run_reads_it(tmp_path: Path):
    """Only the public datasets' tokenized text is cleaned: a user's case keeps its line
    breaks (a headings question reads them) and its spacing."""
    cases = tmp_path / "mine.jsonl"
    text = "Intro\nThe team met .\n\nBody\nAna will ship ."
    rows = [
        {"input": "Meeting one.", "actual_output": text, "labels": {"ok": 1}},
        {"input": "Meeting two.", "actual_output": "Body\nNone.", "labels": {"ok": 0}},
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    kept = collect(BuildPlan(None, (), rules=False, cases=(cases,), label="labels.ok"))
    assert text in {pair.claim for pair in kept}


def test_cli_errors_are_one_line(tmp_path: Path):
    from click.testing import CliRunner

    from anvil_local.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["train", "data", "--out", str(tmp_path / "t.jsonl")])
    assert result.exit_code == 2 and "give --sources DIR" in result.output
    result = runner.invoke(
        main,
        ["train", "data", "--sources", str(tmp_path / "none"), "--out", str(tmp_path / "t.jsonl")],
    )
    assert result.exit_code == 2 and "no such folder" in result.output
    result = runner.invoke(
        main,
        [
            "train",
            "data",
            "--sources",
            str(tmp_path),
            "--source",
            "nope",
            "--out",
            str(tmp_path / "t.jsonl"),
        ],
    )
    assert result.exit_code == 2 and "no training source named 'nope'" in result.output
    result = runner.invoke(
        main, ["train", "convert", "--run", str(tmp_path), "--out", str(tmp_path / "a.gguf")]
    )
    assert result.exit_code == 2 and "no checkpoint (state.json)" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_adapter_targets_are_named_projections_in_block_order(tmp_path: Path):
    from click.testing import CliRunner

    from anvil_local.cli import main
    from anvil_local.train.lora import TARGETS, parse_targets

    assert parse_targets("all") == TARGETS
    assert parse_targets("down_proj, q_proj,v_proj") == ("q_proj", "v_proj", "down_proj")
    for bad in ("q_proj,lm_head", ",", ""):
        with pytest.raises(DataError, match="choose from q_proj"):
            parse_targets(bad)
    data = tmp_path / "t.jsonl"
    data.write_text("")
    result = CliRunner().invoke(
        main, ["train", "lora", "--data", str(data), "--out", str(tmp_path / "r"), "--targets", "x"]
    )
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "--targets 'x': choose from" in result.output
