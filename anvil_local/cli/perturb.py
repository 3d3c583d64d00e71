"""`anvil perturb`: labelled cases made by code from unlabelled documents, for `anvil fit`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from anvil_local.cli import options


@click.command()
@click.option(
    "--data",
    "data_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Cases whose `input` is a document (JSONL, JSON or CSV; other fields are ignored).",
)
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(path_type=Path),
    help="The labelled cases written (JSONL; replaced if it exists).",
)
@click.option(
    "--per-doc",
    type=click.IntRange(1),
    default=2,
    show_default=True,
    help="Faithful sentences per document, and as many changed ones.",
)
@options.SEED
@options.FIELDS
def perturb(
    data_file: Path, out_file: Path, per_doc: int, seed: int, fields: tuple[str, ...]
) -> None:
    """Make labelled cases from documents, FactCC style: a sentence of a document as its
    faithful summary (labels.consistent = 1) and a sentence changed in one checkable way as
    an unfaithful one (0): a number, date word, name or pronoun swapped, a negation added or
    removed, or a sentence of another document. `anvil fit --label labels.consistent` then
    fits a head with no human label."""
    from anvil_local.bench.perturb import make_cases
    from anvil_local.bench.suite import document_of
    from anvil_local.errors import DataError, io_error
    from anvil_local.run.dataset import parse_field_map, read_cases
    from anvil_local.run.output import check_writable

    check_writable(out_file, "--out")
    documents: dict[str, str] = {}
    for row in read_cases(data_file, parse_field_map(fields)):
        text = getattr(row.case, "input", None)  # a conversation or an arena has none
        if isinstance(text, str) and text:
            documents.setdefault(document_of(row), text)
    made = make_cases(documents.items(), per_doc, seed)
    if not made:
        raise DataError(f"{data_file}: no document has a sentence to use")
    try:
        out_file.write_text(
            "".join(json.dumps(m.to_row(i), ensure_ascii=False) + "\n" for i, m in enumerate(made)),
            encoding="utf-8",
        )
    except OSError as exc:
        raise io_error(out_file, exc) from exc
    kinds: dict[str, int] = {}
    for m in made:
        kinds[m.change or "faithful"] = kinds.get(m.change or "faithful", 0) + 1
    shown = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    click.echo(f"wrote {len(made)} cases from {len(documents)} documents to {out_file} ({shown})")
