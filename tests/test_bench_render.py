"""benchmarks/render.py: the README's figure tables are what the results files render (no
model; the renderer is standard library only)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def render():
    spec = importlib.util.spec_from_file_location("bench_render", BENCH / "render.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(**changes):
    data = {
        "schema": 1,
        "question": "tiny",
        "variant": None,
        "title": "A tiny table",
        "columns": ["mode", "tokens", "ratio", "seconds", "difference"],
        "rows": [
            ["cold", 2472, 3.5934, 2.4, {"value": -0.0724, "low": -0.136, "high": -0.005}],
            ["warm", 693, 1.0071, None, {"value": 0.1, "low": None, "high": None}],
        ],
        "formats": {"ratio": "{:.2f}x", "seconds": ".3f", "difference": "+.3f"},
        "notes": ["one note"],
        "caveat": None,
        "command": "python benchmarks/tiny.py --rounds 2",
        "date": "2026-12-02T10:00:00+00:00",
        "machine": {"cpu": "Some CPU", "cores": 2},
        "versions": {"anvil-local": "0.1.0"},
        "models": [{"name": "smollm2-135m-instruct", "file": None, "sha256": "b179c9523d0e6a0f"}],
        "source": "run",
    }
    data.update(changes)
    return data


def test_readme_figures_are_current(render) -> None:
    """Rerun `python benchmarks/render.py` after changing a results file or a block."""
    assert render.main(["--check"]) == 0


def test_every_results_file_is_valid_and_has_a_block(render) -> None:
    results = render.load_results()
    assert results, "no results files"
    readme = "".join(page.read_text() for page in render.PAGES)  # the index and its pages
    for question, records in results.items():
        assert f"<!-- figures:{question} -->" in readme
        for data in records:
            assert data["command"]
            assert data.get("source") == "run" or data.get("recorded")


def test_one_record_renders(render) -> None:
    text = render.render_record(record())
    assert text == (
        "**A tiny table**\n"
        "\n"
        "_Measured 2026-12-02 on Some CPU, 2 cores; model smollm2-135m-instruct (sha256 "
        "b179c9523d0e…); anvil-local 0.1.0. Command: `python benchmarks/tiny.py --rounds 2`._\n"
        "\n"
        "| mode | tokens | ratio | seconds | difference |\n"
        "|---|---|---|---|---|\n"
        "| cold | 2472 | 3.59x | 2.400 | -0.072 [-0.14, -0.01] |\n"
        "| warm | 693 | 1.01x | - | +0.100 |\n"
        "\n"
        "- one note\n"
    )


def test_seeded_record_says_so(render) -> None:
    data = record(
        source="benchmarks/README.md as of 2026-12-02",
        date=None,
        recorded="2026-11-30",
        machine={"description": "a 2-core VM"},
        caveat="Old layout.",
    )
    text = render.render_record(data)
    assert "_Copied from benchmarks/README.md as of 2026-12-02, recorded 2026-11-30, not a " in text
    assert "> **Caveat:** Old layout.\n" in text


def test_render_is_idempotent_and_check_fails_when_stale(render, tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "tiny.json").write_text(json.dumps(record()))
    readme = tmp_path / "README.md"
    readme.write_text("# B\n\nText.\n\n<!-- figures:tiny -->\nold\n<!-- /figures -->\n\nEnd.\n")
    args = ["--readme", str(readme), "--results", str(results)]
    assert render.main([*args, "--check"]) == 1
    assert render.main(args) == 0
    first = readme.read_text()
    assert first.startswith("# B\n\nText.\n\n<!-- figures:tiny -->\n**A tiny table**\n")
    assert first.endswith("- one note\n<!-- /figures -->\n\nEnd.\n")
    assert render.main([*args, "--check"]) == 0
    assert render.main(args) == 0
    assert readme.read_text() == first


def test_results_without_a_block_are_an_error(render, tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "tiny.json").write_text(json.dumps(record()))
    (results / "tiny.q8.json").write_text(json.dumps(record(variant="q8")))
    readme = tmp_path / "README.md"
    readme.write_text("<!-- figures:other -->\n<!-- /figures -->\n")
    assert render.main(["--readme", str(readme), "--results", str(results)]) == 1
    with pytest.raises(render.RenderError, match="tiny"):
        render.render_readme(readme.read_text(), render.load_results(results))
    text = render.render_readme(readme.read_text(), {})
    assert render.EMPTY in text


def test_variants_follow_the_plain_file(render, tmp_path: Path) -> None:
    (tmp_path / "tiny.b.json").write_text(json.dumps(record(variant="b", title="B")))
    (tmp_path / "tiny.json").write_text(json.dumps(record(title="plain")))
    (tmp_path / "tiny.a.json").write_text(json.dumps(record(variant="a", title="A")))
    titles = [r["title"] for r in render.load_results(tmp_path)["tiny"]]
    assert titles == ["plain", "A", "B"]


def test_a_misnamed_or_malformed_file_is_an_error(render, tmp_path: Path) -> None:
    (tmp_path / "wrong.json").write_text(json.dumps(record()))
    with pytest.raises(render.RenderError, match=r"name the file tiny\.json"):
        render.load_results(tmp_path)
    (tmp_path / "wrong.json").write_text(json.dumps(record(rows=[["a"]])))
    with pytest.raises(render.RenderError, match="row 1 has 1 cells"):
        render.load_results(tmp_path)


def test_a_variant_with_a_block_of_its_own_renders_there_alone(render, tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "tiny.json").write_text(json.dumps(record(title="plain")))
    (results / "tiny.a.json").write_text(json.dumps(record(variant="a", title="A")))
    (results / "tiny.b.json").write_text(json.dumps(record(variant="b", title="B")))
    text = render.render_readme(
        "<!-- figures:tiny -->\n<!-- /figures -->\n\n<!-- figures:tiny.b -->\n<!-- /figures -->\n",
        render.load_results(results),
    )
    plain, own = text.split("<!-- figures:tiny.b -->")
    assert "**plain**" in plain and "**A**" in plain and "**B**" not in plain
    assert "**B**" in own and "**plain**" not in own and "**A**" not in own


def test_the_index_is_short_and_links_every_page_and_question(render) -> None:
    """benchmarks/README.md is an index (at most 150 lines) of the pages by area; every
    figures block lives on a page, under a heading the index links to."""
    import re

    def anchor(heading: str) -> str:
        return re.sub(r"[^\w\- ]", "", heading.lower().replace("`", "")).replace(" ", "-")

    index = render.README.read_text()
    assert len(index.splitlines()) <= 150
    assert "<!-- figures:" not in index
    for page in render.PAGES[1:]:
        text = page.read_text()
        assert f"]({page.name})" in index, page.name
        for block in render.BLOCK.finditer(text):
            headings = re.findall(r"^#{2,3} (.+)$", text[: block.start()], re.M)
            link = f"({page.name}#{anchor(headings[-1])})"
            assert link in index, f"{block['question']}: the index has no link {link}"


def test_a_block_renders_on_whichever_page_holds_it(render, tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "tiny.json").write_text(json.dumps(record()))
    pages = {
        "index.md": "# Index\n",
        "area.md": "# Area\n<!-- figures:tiny -->\n<!-- /figures -->\n",
    }
    rendered = render.render_pages(pages, render.load_results(results))
    assert rendered["index.md"] == "# Index\n"
    assert rendered["area.md"].startswith("# Area\n<!-- figures:tiny -->\n**A tiny table**\n")
