"""Render the benchmarks' JSON figures into the tables of the benchmarks pages
(benchmarks/speed.md, agreement.md, training.md, formats.md; README.md is their index).

    python benchmarks/render.py           # rewrite the pages' figure blocks
    python benchmarks/render.py --check   # exit 1 when a page is not what they render

The pages hold one block per question (each on one page), and only this script writes inside
it:

    <!-- figures:prefix_reuse -->
    ...
    <!-- /figures -->

Every file `benchmarks/results/<question>.json` or `<question>.<variant>.json` (the schema is
in `harness.py`) is rendered into its question's block, the plain file first, then the
variants by name: a line saying where the figures come from, the table, then the notes.
A block named `<question>.<variant>` holds that variant alone, where the text about it is;
the question's own block then leaves it out. A results file whose question has no block, a
block named twice or a file that does not read is an error (exit 1, nothing written). A block
with no results file says so. Rendering is idempotent: a second run changes nothing.
Standard library only, so the check runs without the model or the package's dependencies.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
README = BENCH_DIR / "README.md"
#: The pages the figures live on, by area; the README is their index.
PAGES = [
    README,
    *(BENCH_DIR / f"{area}.md" for area in ("speed", "agreement", "training", "formats")),
]
_PAGE = re.compile(r"<!-- render:page (?P<name>[^ ]+) -->\n")
RESULTS = BENCH_DIR / "results"
SCHEMA = 1

BLOCK = re.compile(
    r"(?P<open><!-- figures:(?P<question>[A-Za-z0-9_.-]+) -->\n)"
    r"(?P<body>.*?)"
    r"(?P<close><!-- /figures -->)",
    re.S,
)
EMPTY = "_No figures recorded yet: run the command above._\n"
REQUIRED = ("schema", "question", "title", "columns", "rows")


class RenderError(Exception):
    pass


# -- reading ---------------------------------------------------------------------------------


def check_record(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise RenderError(f"{where}: not a JSON object")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise RenderError(f"{where}: missing {', '.join(missing)}")
    if data["schema"] != SCHEMA:
        raise RenderError(f"{where}: schema {data['schema']!r}, this renderer reads {SCHEMA}")
    columns = data["columns"]
    for number, row in enumerate(data["rows"], 1):
        if len(row) != len(columns):
            raise RenderError(
                f"{where}: row {number} has {len(row)} cells for {len(columns)} columns"
            )
    return data


def load_results(folder: Path = RESULTS) -> dict[str, list[dict[str, Any]]]:
    """question -> its records, the plain one first, then the variants by file name."""
    found: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise RenderError(f"{path}: {exc}") from None
        data = check_record(data, str(path))
        question, variant = data["question"], data.get("variant")
        expected = question if not variant else f"{question}.{variant}"
        if path.stem != expected:
            raise RenderError(f"{path}: holds {expected!r}; name the file {expected}.json")
        found.setdefault(question, []).append((variant or "", data))
    return {q: [d for _, d in sorted(items, key=lambda x: x[0])] for q, items in found.items()}


# -- one file as Markdown --------------------------------------------------------------------


def _number(value: float, fmt: str | None) -> str:
    if not fmt:
        return str(value)
    return fmt.format(value) if "{" in fmt else format(value, fmt)


def format_cell(value: Any, fmt: str | None = None) -> str:
    """A cell as table text: a number in its column's format, an interval as
    "value [low, high]", null as "-"."""
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, Mapping) and "value" in value:
        if value["value"] is None:
            text = "-"
        else:
            main = fmt or ".3f"
            text = _number(value["value"], main)
            if value.get("low") is not None and value.get("high") is not None:
                edge = "+.2f" if main.startswith("+") else ".2f"
                text += f" [{format(value['low'], edge)}, {format(value['high'], edge)}]"
    elif isinstance(value, int | float):
        text = _number(value, fmt)
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], formats: Mapping[str, str]) -> str:
    lines = [
        "| " + " | ".join(format_cell(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in rows:
        cells = [format_cell(v, formats.get(c)) for c, v in zip(columns, row, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _models(models: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for m in models:
        name = m.get("name") or m.get("file") or "?"
        sha = m.get("sha256")
        parts.append(f"{name} (sha256 {sha[:12]}…)" if sha else name)
    return ", ".join(parts)


def _machine(machine: Mapping[str, Any]) -> str:
    if machine.get("description"):
        return str(machine["description"])
    cpu = machine.get("cpu") or "unknown CPU"
    cores = machine.get("cores")
    return f"{cpu}, {cores} cores" if cores else cpu


def provenance(data: Mapping[str, Any]) -> str:
    """One line: when, on what, with which model and code, by which command."""
    machine = _machine(data.get("machine") or {})
    models = _models(data.get("models") or [])
    versions = data.get("versions") or {}
    anvil = versions.get("anvil-local")
    source = data.get("source") or "run"
    command = data.get("command")
    parts = []
    if source == "run":
        date = (data.get("date") or "")[:10] or "an unknown date"
        parts.append(f"Measured {date} on {machine}")
    else:
        recorded = data.get("recorded") or data.get("date")
        when = f", recorded {recorded}" if recorded else ""
        parts.append(f"Copied from {source}{when}, not a fresh run; {machine}")
    if models:
        parts.append(f"model {models}")
    if anvil:
        parts.append(f"anvil-local {anvil}")
    line = "; ".join(parts)
    if command:
        line += f". Command: `{command}`"
    return f"_{line}._\n"


def render_record(data: Mapping[str, Any]) -> str:
    """One results file as Markdown: title, where it comes from, caveat, table, notes."""
    out = [f"**{data['title']}**\n", "\n", provenance(data), "\n"]
    if data.get("caveat"):
        out += [f"> **Caveat:** {data['caveat']}\n", "\n"]
    out.append(table(data["columns"], data["rows"], data.get("formats") or {}))
    notes = data.get("notes") or []
    if notes:
        out.append("\n")
        out += [f"- {note}\n" for note in notes]
    return "".join(out)


def render_block(records: Sequence[Mapping[str, Any]]) -> str:
    if not records:
        return EMPTY
    return "\n".join(render_record(r) for r in records)


# -- the README ------------------------------------------------------------------------------


def render_readme(text: str, results: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """`text` with every figures block rewritten from `results`. Raises RenderError for a
    question with results and no block, or a block named twice."""
    seen: list[str] = [m["question"] for m in BLOCK.finditer(text)]
    twice = sorted({q for q in seen if seen.count(q) > 1})
    if twice:
        raise RenderError(f"figures blocks named more than once: {', '.join(twice)}")
    blocks: dict[str, list[Mapping[str, Any]]] = {name: [] for name in seen}
    homeless = []
    for question, records in results.items():
        for data in records:
            own = f"{question}.{data['variant']}" if data.get("variant") else None
            home = own if own in blocks else question
            if home not in blocks:
                homeless.append(own or question)
                continue
            blocks[home].append(data)
    if homeless:
        raise RenderError(
            "results with no figures block in the README: "
            + ", ".join(sorted(set(homeless)))
            + " (add <!-- figures:NAME --> ... <!-- /figures --> where each belongs)"
        )

    def fill(match: re.Match[str]) -> str:
        body = render_block(blocks[match["question"]])
        return f"{match['open']}{body}{match['close']}"

    return BLOCK.sub(fill, text)


def render_pages(
    texts: Mapping[str, str], results: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, str]:
    """Every page with its figures blocks rewritten: the pages are rendered as one text, so
    a question's block may be on any page but on one only, and every result has a home."""
    joined = "".join(f"<!-- render:page {name} -->\n{text}" for name, text in texts.items())
    rendered = render_readme(joined, results)
    marks = list(_PAGE.finditer(rendered))
    return {
        mark["name"]: rendered[mark.end() : marks[i + 1].start() if i + 1 < len(marks) else None]
        for i, mark in enumerate(marks)
    }


def stale_blocks(old: str, new: str) -> list[str]:
    before = {m["question"]: m["body"] for m in BLOCK.finditer(old)}
    return [m["question"] for m in BLOCK.finditer(new) if before.get(m["question"]) != m["body"]]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if a page is stale")
    p.add_argument("--readme", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    pages = [args.readme] if args.readme is not None else [page for page in PAGES if page.exists()]
    try:
        old = {str(page): page.read_text() for page in pages}
        new = render_pages(old, load_results(args.results))
    except (OSError, RenderError) as exc:
        print(f"render: {exc}", file=sys.stderr)
        return 1
    status = 0
    for page in pages:
        before, after = old[str(page)], new[str(page)]
        if after == before:
            continue
        stale = ", ".join(stale_blocks(before, after)) or "outside the figures blocks"
        if args.check:
            print(
                f"render: {page} is stale ({stale}); run python benchmarks/render.py",
                file=sys.stderr,
            )
            status = 1
            continue
        page.write_text(after)
        print(f"render: rewrote {stale} in {page}")
    return status


if __name__ == "__main__":
    sys.exit(main())
