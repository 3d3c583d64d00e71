"""The documentation against the code: the CLI reference is what `--help` prints, links and
paths point at files that exist, and the commands, options, environment variables and metric
snippets the docs show are ones the code knows. No model is loaded, but by the README's main
job (marked `model`)."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import tomllib
from pathlib import Path

import click
import pytest

from anvil_local.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`]+)`")
#: Options the docs name that belong to other programs (pytest's, from the anvil plugin).
FOREIGN_OPTIONS = {"--anvil-model"}


def _doc_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _blocks(path: Path) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(_text(path))]


def _prose(path: Path) -> str:
    """The text outside fenced code blocks."""
    return FENCE.sub("", _text(path))


def _spans(path: Path) -> list[str]:
    """The inline code spans of the prose, each on one line."""
    return [" ".join(s.split()) for s in SPAN.findall(_prose(path))]


def _slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    headings = re.findall(r"^#{1,6} +(.+?) *$", _prose(path), re.MULTILINE)
    return {_slug(h) for h in headings}


def _generator():
    spec = importlib.util.spec_from_file_location(
        "generate_cli_reference", ROOT / "docs" / "generate_cli_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_current():
    generator = _generator()
    assert generator.OUT.read_text(encoding="utf-8") == generator.render(), (
        "docs/cli.md is out of date: run python docs/generate_cli_reference.py"
    )
    assert generator.main(["--check"]) == 0


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_relative_links_point_at_files_and_headings(doc: Path):
    for target in LINK.findall(_prose(doc)):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        assert dest.exists(), f"{_doc_id(doc)}: link to {target} points at nothing"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{_doc_id(doc)}: no heading #{anchor} in {dest.name}"


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_paths_the_docs_name_exist(doc: Path):
    """A `path/like/this` in backticks whose first folder is one of the repository's (or of
    the package's) names a file or folder that exists."""
    roots = [ROOT, ROOT / "anvil_local"]
    folders = {p.name for base in roots for p in base.iterdir() if p.is_dir()}
    for span in _spans(doc):
        if not re.fullmatch(r"[\w.-]+(/[\w.-]*)+", span) or span.split("/")[0] not in folders:
            continue
        assert any((base / span).exists() for base in roots), f"{_doc_id(doc)}: no {span}"


def test_environment_variables_the_docs_name_are_read_by_the_code():
    source = "\n".join(_text(p) for p in (ROOT / "anvil_local").rglob("*.py"))
    for doc in DOCS:
        for name in set(re.findall(r"\bANVIL_[A-Z_]+\b", _text(doc))):
            assert re.search(rf"\b{name}\b", source), f"{_doc_id(doc)}: {name} is not read"


def _all_options() -> set[str]:
    found = {"-h", "--help"}

    def walk(command: click.Command) -> None:
        for param in command.params:
            found.update(param.opts + param.secondary_opts)
        if isinstance(command, click.Group):
            for sub in command.commands.values():
                walk(sub)

    walk(main)
    return found


def _check_command(line: str, where: str) -> None:
    """`anvil SUB [SUB] ... --option ...`: the subcommands exist and take those options."""
    words = shlex.split(line)[1:]
    command: click.Command = main
    ctx = click.Context(main)
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        sub = command.get_command(ctx, words[0])
        assert sub is not None, f"{where}: `{line}`: no command {words[0]!r}"
        command, words = sub, words[1:]
    known = {o for p in [*command.params, *main.params] for o in p.opts + p.secondary_opts}
    known |= {"-h", "--help"}
    for word in words:
        if word.startswith("-") and not re.fullmatch(r"-\d+", word):
            name = word.split("=")[0]
            assert name in known, f"{where}: `{line}`: {command.name} has no option {name}"


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_anvil_commands_the_docs_show_are_real(doc: Path):
    where = _doc_id(doc)
    lines = []
    for _, body in _blocks(doc):
        for line in body.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                output = re.match(r"anvil [\w-]+: ", part.strip())  # a line it printed
                if part.strip().startswith("anvil ") and not output:
                    lines.append(part.strip())
    lines += [s for s in _spans(doc) if s.startswith("anvil ")]
    for line in lines:
        _check_command(line.replace("...", ""), where)
    options = _all_options() | FOREIGN_OPTIONS
    for span in _spans(doc):
        if span.startswith("--"):
            name = span.split()[0].split("=")[0]
            assert name in options, f"{where}: `{span}`: no anvil command has {name}"


def _example_metrics() -> dict[str, dict]:
    """The metric definitions of the example files, by metric name."""
    found = {}
    for path in sorted((ROOT / "examples").rglob("*.toml")):
        data = tomllib.loads(_text(path))
        if "name" in data:
            found[data["name"]] = data
    return found


def _member_files(data: dict) -> list[Path]:
    """The example files a snippet's metric names as its members (a chunked metric's
    `metric`, a features metric's file members) and their own members, found among the
    examples."""
    named = [data.get("metric"), *list(data.get("features") or [])]
    found = []
    for name in (n for n in named if isinstance(n, str)):
        matches = sorted((ROOT / "examples").rglob(name))
        assert matches, f"a snippet names {name}, which no example file is"
        found += [matches[0], *_member_files(tomllib.loads(_text(matches[0])))]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_metric_snippets_load_and_match_the_examples_they_show(doc: Path, tmp_path: Path):
    from anvil_local.spec import load_metrics

    examples = _example_metrics()
    for number, (language, body) in enumerate(_blocks(doc)):
        if language != "toml":
            continue
        data = tomllib.loads(body)  # every TOML snippet parses
        if "type" not in data:
            continue  # a fragment (a table of a metric file), not a whole file
        path = tmp_path / f"snippet{number}.toml"
        path.write_text(body, encoding="utf-8")
        for member in _member_files(data):  # files a snippet names, as beside its example
            shutil.copy(member, tmp_path / member.name)
        assert load_metrics(path), f"{_doc_id(doc)}: snippet {number} holds no metric"
        shown = examples.get(data.get("name"))
        if shown is not None:  # a snippet with an example's name shows that example file
            assert data == shown, f"{_doc_id(doc)}: the {data['name']!r} snippet differs"


def test_readme_python_snippets_compile():
    blocks = [body for language, body in _blocks(ROOT / "README.md") if language == "python"]
    assert blocks
    for body in blocks:
        compile(body, "README.md", "exec")


def _leaf(line: dict) -> str:
    """Where a headings DAG's walk ended, in the question's own terms: the headings are not
    all there, there in order, or there out of order (each DAG names its nodes its own way)."""
    verdicts = [
        step.get("verdict") for step in line["trace"]["path"] if step.get("verdict") is not None
    ]
    if verdicts[0] in (False, "No"):
        return "not all there"
    return "in order" if verdicts[1] in (True, "Yes") else "out of order"


@pytest.mark.model
def test_readme_main_job_runs_and_its_two_dags_agree_on_every_leaf(
    real_data_dir, tmp_path, monkeypatch
):
    """The README's main job, as its first set-up command runs it: the code DAG and the
    trained judge's DAG walk each example summary to the same leaf, and `--pair` sets them
    side by side."""
    from click.testing import CliRunner

    setup = next(
        b for lang, b in _blocks(ROOT / "README.md") if lang == "sh" and "pip install ." in b
    )
    job = setup.strip().split("&& ")[-1]
    assert job.startswith("anvil eval ") and "--pair" in job
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, shlex.split(job)[1:])
    assert result.exit_code == 1, result.output  # three of the four summaries fail, as they should
    assert (
        "Summary headings and Summary headings (trained judge): the same verdict on 4 of 4 cases"
        in result.output
    )
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()[1:]]
    leaves: dict[str, dict[str, str]] = {}
    for line in lines:
        leaves.setdefault(line["case_id"], {})[line["metric"]] = _leaf(line)
    assert len(leaves) == 4
    for case, by_metric in leaves.items():
        assert len(set(by_metric.values())) == 1, (case, by_metric)
    assert {c: v["Summary headings"] for c, v in leaves.items()} == {
        "ordered": "in order",
        "missing-conclusion": "not all there",
        "swapped": "out of order",
        "no-headings": "not all there",
    }
