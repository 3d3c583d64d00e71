"""Bad inputs to `anvil eval`, each through the CLI: exit code 2, one `Error:` line, no
traceback. Inputs are built in a temp dir; none of these reach a model decode."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.run.results import result_items

ROOT = Path(__file__).resolve().parent.parent
CASE = {"id": "a", "input": "The cat sat on the mat.", "actual_output": "A cat sat."}
GEVAL = """type = "geval"
name = "Good"
criteria = "Is it good?"
evaluation_steps = ["Read it.", "Judge it."]
evaluation_params = ["input", "actual_output"]
"""
DAG = """type = "dag"
name = "Dag"
[nodes.q]
type = "binary"
criteria = "Is it short?"
evaluation_params = ["actual_output"]
verdicts = [{ verdict = true, score = 10 }, { verdict = false, score = 0 }]
"""


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def jsonl(*rows: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


Setup = Callable[[Path], list[str]]  # tmp dir -> extra CLI args (replacing the defaults)


def data(content: str | bytes, name: str = "cases.jsonl") -> Setup:
    return lambda tmp: ["--data", str(write(tmp / name, content))]


def metric(content: str | bytes, name: str = "m.toml") -> Setup:
    return lambda tmp: ["--metric", str(write(tmp / name, content))]


def options(*args: str) -> Setup:
    return lambda tmp: list(args)


def out_file(content: str | bytes | None, name: str = "r.jsonl") -> Setup:
    def setup(tmp: Path) -> list[str]:
        path = tmp / name
        if content is not None:
            write(path, content)
        return ["--out", str(path)]

    return setup


def other_model_results() -> Setup:
    line = {"position": 0, "case_id": "a", "metric": "Good", "score": 1, "model_sha256": "00"}
    return out_file(jsonl(line))


BIG = "x" * 200_000
TASK_ALONE = """type = "dag"
name = "T"
[nodes.t]
type = "task"
instructions = "List the headings."
output_label = "Headings"
evaluation_params = ["actual_output"]
"""
UNREACHABLE = """[nodes.island]
type = "binary"
criteria = "Alone?"
verdicts = [{ verdict = true, score = 10 }, { verdict = false, score = 0 }]
"""


def code_node(check: str, args: str, bounds: str = "") -> str:
    """A DAG of one code node running `check` with `args` (TOML inline-table body)."""
    return (
        f'type = "dag"\nname = "Code"\n[nodes.c]\ntype = "code"\ncheck = "{check}"\n'
        f'args = {{ {args} }}\nfields = ["actual_output"]\n{bounds}\n'
        "verdicts = [{ verdict = true, score = 10 }, { verdict = false, score = 0 }]\n"
    )


def choice(*options: str) -> str:
    verdicts = ", ".join(f"{{ verdict = {o}, score = {i} }}" for i, o in enumerate(options))
    return (
        'type = "dag"\nname = "Choice"\n[nodes.q]\ntype = "non_binary"\n'
        f'criteria = "Which?"\nevaluation_params = ["actual_output"]\nverdicts = [{verdicts}]\n'
    )


def chain(length: int, last: str = "score = 10") -> str:
    """A DAG of `length` code nodes in a chain, each yes leading to the next."""
    parts = ['type = "dag"\nname = "Chain"\nroots = ["n0"]\n']
    for i in range(length):
        then = f'then = "n{i + 1}"' if i < length - 1 else last
        parts.append(
            f'[nodes.n{i}]\ntype = "code"\ncheck = "regex"\nargs = {{ pattern = "a" }}\n'
            f'fields = ["actual_output"]\n'
            f"verdicts = [{{ verdict = true, {then} }}, {{ verdict = false, score = 0 }}]\n"
        )
    return "".join(parts)


BAD: list[tuple[str, Setup, str]] = [
    # data files
    ("data missing", lambda t: ["--data", str(t / "nope.jsonl")], "no such file"),
    ("data is a directory", lambda t: ["--data", str(t)], "cannot read"),
    ("data empty", data(""), "no test cases"),
    ("data blank lines only", data("\n\n  \n"), "no test cases"),
    (
        "data latin-1 bytes",
        data(b'{"id": "a", "input": "caf\xe9", "actual_output": "x"}\n'),
        "not UTF-8 text",
    ),
    ("data binary garbage", data(bytes(range(256)) * 4), "not UTF-8 text"),
    ("data utf-16", data(jsonl(CASE).encode("utf-16")), "not UTF-8 text"),
    ("data invalid json line", data('{"id": "a", "input": \n'), "invalid JSON"),
    ("data json list line", data("[1, 2]\n"), "cases.jsonl:1"),
    ("data json string line", data('"hello"\n'), "cases.jsonl:1"),
    ("data json number line", data("42\n"), "cases.jsonl:1"),
    ("data .json not an array", data('{"a": 1}', "cases.json"), "holds an array"),
    ("data .json invalid", data("[{", "cases.json"), "invalid JSON"),
    ("data .json latin-1", data(b'[{"input": "\xe9"}]', "cases.json"), "not UTF-8 text"),
    (
        "data csv latin-1",
        data(b"id,input,actual_output\na,caf\xe9,x\n", "cases.csv"),
        "not UTF-8 text",
    ),
    (
        "data csv huge cell, no output",
        data(f"id,input\na,{BIG}\n", "cases.csv"),
        "has no 'actual_output'",
    ),
    ("data duplicate ids", data(jsonl(CASE, CASE)), "duplicate case id 'a'"),
    ("data no actual_output", data(jsonl({"id": "a", "input": "x"})), "has no 'actual_output'"),
    (
        "data empty actual_output",
        data(jsonl({"id": "a", "input": "x", "actual_output": ""})),
        "has no 'actual_output'",
    ),
    (
        "data no input for a geval on input",
        data(jsonl({"id": "a", "actual_output": "x"})),
        "has no 'input'",
    ),
    ("field map without =", options("--field", "input"), "param=column"),
    ("field map unknown param", options("--field", "bogus=input"), "bogus"),
    # metric files
    ("metric missing", lambda t: ["--metric", str(t / "nope.toml")], "no such metric file"),
    ("metric is a directory", lambda t: ["--metric", str(t)], "cannot read"),
    ("metric empty", metric(""), "m.toml"),
    ("metric invalid toml", metric("type = \n"), "m.toml"),
    ("metric invalid json", metric("{", "m.json"), "m.json"),
    (
        "metric latin-1",
        metric(GEVAL.replace("good", "gut").encode() + b"# \xe9\n"),
        "not UTF-8 text",
    ),
    ("metric utf-16", metric(GEVAL.encode("utf-16")), "not UTF-8 text"),
    ("metric binary", metric(bytes(range(256))), "m.toml"),
    ("metric unknown type", metric(GEVAL.replace('"geval"', '"judge"')), "m.toml"),
    ("metric yaml suffix", metric(GEVAL, "m.yaml"), "m.yaml"),
    ("geval no name", metric(GEVAL.replace('name = "Good"\n', "")), "m.toml"),
    (
        "geval no criteria or steps",
        metric('type = "geval"\nname = "G"\nevaluation_params = ["input"]\n'),
        "m.toml",
    ),
    ("geval threshold 2", metric(GEVAL + "threshold = 2\n"), "threshold"),
    ("geval threshold text", metric(GEVAL + 'threshold = "high"\n'), "threshold"),
    ("geval unknown param", metric(GEVAL.replace('"input", ', '"inputs", ')), "inputs"),
    ("geval empty steps", metric(GEVAL.replace('["Read it.", "Judge it."]', "[]")), "m.toml"),
    (
        "geval overlapping rubric",
        metric(
            GEVAL
            + 'rubric = [{ score_range = [0, 6], expected_outcome = "a" }, { score_range = [5, 10], expected_outcome = "b" }]\n'
        ),
        "m.toml",
    ),
    ("dag no nodes", metric('type = "dag"\nname = "D"\n'), "m.toml"),
    (
        "dag verdict score and then",
        metric(DAG.replace("score = 10 }", 'score = 10, then = "q" }')),
        "m.toml",
    ),
    ("dag then unknown node", metric(DAG.replace("score = 10 }", 'then = "nowhere" }')), "nowhere"),
    ("dag two true verdicts", metric(DAG.replace("verdict = false", "verdict = true")), "m.toml"),
    ("dag score 11", metric(DAG.replace("score = 10", "score = 11")), "m.toml"),
    ("dag cycle", metric(DAG.replace("score = 10 }", 'then = "q" }')), "m.toml"),
    (
        "two metrics, one name",
        lambda t: [
            "--metric",
            str(write(t / "a.toml", GEVAL)),
            "--metric",
            str(write(t / "b.toml", GEVAL)),
        ],
        "two metrics are named 'Good'",
    ),
    # models
    ("model missing file", options("--model", "/nonexistent/model.gguf"), "no model file"),
    ("model unknown name", options("--model", "no-such-model"), "no-such-model"),
    (
        "model garbage file",
        lambda t: ["--model", str(write(t / "bad.gguf", os.urandom(4096)))],
        "cannot load model",
    ),
    (
        "model empty file",
        lambda t: ["--model", str(write(t / "empty.gguf", b""))],
        "cannot load model",
    ),
    ("model is a directory", lambda t: ["--model", str(t)], "model"),
    # options
    ("jobs 0", options("--jobs", "0"), "--jobs"),
    ("jobs text", options("--jobs", "two"), "--jobs"),
    ("n-ctx 10", options("--n-ctx", "10"), "--n-ctx"),
    ("threads 0", options("--threads", "0"), "--threads"),
    ("batch-size 0", options("--batch-size", "0"), "--batch-size"),
    ("n-gpu-layers -2", options("--n-gpu-layers", "-2"), "--n-gpu-layers"),
    ("unknown option", options("--frobnicate"), "--frobnicate"),
    ("shard out of range", options("--shard", "5/3"), "i must be between 1 and n"),
    ("shard not i/n", options("--shard", "half"), "a shard is i/n"),
    ("ray address without ray", options("--ray-address", "x:1"), "--ray-address needs"),
    ("unknown executor", options("--executor", "spark"), "--executor"),
    # output paths
    ("out is a directory", lambda t: ["--out", str(t)], "is a directory"),
    ("out under a file", lambda t: ["--out", str(write(t / "f", "x") / "r.jsonl")], "r.jsonl"),
    ("out not results", out_file("hello world\n"), "not a result line"),
    ("out latin-1 bytes", out_file(b"caf\xe9\n"), "not a result line"),
    (
        "out torn middle line",
        out_file('{"case_id": "a", "metric": "Good"}\n{"case_\n{}\n'),
        "not a result line",
    ),
    ("out from another model", other_model_results(), "holds results of another model"),
    ("junit is a directory", lambda t: ["--junit", str(t)], "--junit"),
    ("junit under a file", lambda t: ["--junit", str(write(t / "g", "x") / "r.xml")], "r.xml"),
    # a full disk, and devices where a file belongs
    ("out on a full device", options("--out", "/dev/full"), "not a regular file"),
    ("out a device that never ends", options("--out", "/dev/zero"), "not a regular file"),
    ("junit on a full device", options("--junit", "/dev/full"), "No space left on device"),
    # check arguments, checked when the metric file is loaded
    ("code regex bad pattern", metric(code_node("regex", 'pattern = "([a-z"')), "invalid pattern"),
    (
        "code regex_count bad pattern",
        metric(code_node("regex_count", 'pattern = "a{2,1}"', "at_least = 1")),
        "invalid pattern",
    ),
    (
        "code json_valid bad schema",
        metric(code_node("json_valid", 'schema = { type = "objekt" }')),
        "invalid JSON Schema",
    ),
    (
        "code json_valid schema not a table",
        metric(code_node("json_valid", 'schema = "object"')),
        "'schema' must be a JSON Schema",
    ),
    (
        "code length min above max",
        metric(code_node("length", "min = 10, max = 2")),
        "'min' (10) is above 'max' (2)",
    ),
    ("code length negative", metric(code_node("length", "max = -1")), "'max' cannot be negative"),
    ("code length unit", metric(code_node("length", 'unit = "pages"')), "'unit' must be"),
    ("code terms empty", metric(code_node("contains_all", "terms = []")), "'terms' must be"),
    ("code terms a string", metric(code_node("ordered", 'terms = "Intro"')), "'terms' must be"),
    ("code ngram n 0", metric(code_node("ngram_overlap", "n = 0", "at_least = 0.5")), "'n' must"),
    ("code unknown argument", metric(code_node("regex", 'patern = "x"')), "patern"),
    ("code missing argument", metric(code_node("regex", "")), "pattern"),
    ("code unknown check", metric(code_node("shouting", "")), "unknown check 'shouting'"),
    (
        "code bounds reversed",
        metric(code_node("number", "", "at_least = 5\nat_most = 1")),
        "'at_least' (5) is above 'at_most' (1)",
    ),
    ("code bound not a number", metric(code_node("number", "", 'at_least = "5"')), "at_least"),
    (
        "check metric bad pattern",
        metric('type = "check"\nname = "C"\ncheck = "regex"\nargs = { pattern = "(" }\n'),
        "invalid pattern",
    ),
    (
        "check metric args not a table",
        metric('type = "check"\nname = "C"\ncheck = "regex"\nargs = "x"\n'),
        "'args' must be a table",
    ),
    # graph shapes and options at their limits
    (
        "dag chain with a cycle at depth 1500",
        metric(chain(1500, last='then = "n0"')),
        "Cycle detected",
    ),
    (
        "dag node unreachable",
        metric(DAG.replace('name = "Dag"', 'name = "Dag"\nroots = ["q"]') + UNREACHABLE),
        "is not reachable",
    ),
    ("nonbinary one duplicate option", metric(choice('"Yes"', '"Yes"')), "Duplicate verdict"),
    ("nonbinary empty option", metric(choice('""', '"No"')), "cannot be empty"),
    ("nonbinary numeric option", metric(choice("3", '"No"')), "must be a string"),
    ("task without children", metric(TASK_ALONE), "children"),
    ("geval name with a newline", metric(GEVAL.replace('"Good"', '"Go\\nod"')), "one line"),
    # odd encodings and values in case files
    (
        "data lone surrogate",
        data('{"id": "a", "input": "x\\ud800", "actual_output": "y"}\n'),
        "lone surrogate",
    ),
    ("data id a list", data(jsonl({**CASE, "id": [1]})), "id must be a string"),
    ("data id a bool", data(jsonl({**CASE, "id": True})), "id must be a string"),
    ("data input NaN", data('{"id": "a", "input": NaN, "actual_output": "y"}\n'), "string"),
    (
        "data 20,000 cases, the last id a duplicate",
        data(jsonl(*[{**CASE, "id": f"c{i}"} for i in range(20_000)], {**CASE, "id": "c7"})),
        "duplicate case id 'c7'",
    ),
]


@pytest.fixture(scope="module")
def model_path(default_model_path: Path) -> Path:
    return default_model_path


@pytest.mark.parametrize(
    ("setup", "expected"), [(s, e) for _, s, e in BAD], ids=[n for n, _, _ in BAD]
)
def test_a_bad_input_is_one_error_line_and_exit_2(
    tmp_path: Path, setup: Setup, expected: str, model_path: Path
):
    given = setup(tmp_path)
    defaults = {
        "--data": str(write(tmp_path / "good.jsonl", jsonl(CASE))),
        "--metric": str(write(tmp_path / "good.toml", GEVAL)),
        "--model": str(model_path),
        "--out": str(tmp_path / "good-out.jsonl"),
    }
    args = ["eval", *given]
    for option, value in defaults.items():
        if option not in given:
            args += [option, value]
    result = CliRunner().invoke(main, [*args, "--no-reason"])
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: "), lines[0]
    assert expected in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_the_table_is_large():
    assert len(BAD) >= 50


# -- a full disk, a deep graph, validate ------------------------------------------------


def _run_with_file_limit(args: list[str], limit: int | None, env: dict[str, str]):
    """`anvil` in a child whose writes beyond `limit` bytes fail with an OS error, as on a
    full disk (RLIMIT_FSIZE: every write past it is refused with EFBIG)."""

    def cap() -> None:
        if limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "anvil_local.cli", *args],
        preexec_fn=cap,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )


def _headings_run(model_path: Path) -> list[str]:
    """`anvil eval` of the code-node headings DAG on the four example cases."""
    return [
        *("eval", "--metric", str(ROOT / "examples" / "headings.toml")),
        *("--data", str(ROOT / "examples" / "meeting_summaries.jsonl")),
        *("--model", str(model_path)),
    ]


def test_a_full_disk_stops_the_run_in_one_line_and_a_rerun_resumes(tmp_path: Path, model_path):
    out = tmp_path / "results.jsonl"
    args = [*_headings_run(model_path), "--out", str(out), "--no-cache"]
    full = _run_with_file_limit(args, 3000, {})  # the metadata line and one or two results
    assert full.returncode == 2, full.stderr
    stderr = [x for x in full.stderr.splitlines() if x.strip()]
    assert stderr == [f"Error: {out}: cannot write: File too large"]
    written = out.read_bytes()
    meta, *complete = written[: written.rfind(b"\n") + 1].splitlines()
    assert "meta" in json.loads(meta)
    assert 1 <= len(complete) < 4
    assert all(json.loads(x)["metric"] == "Summary headings" for x in complete)
    again = _run_with_file_limit(args, None, {})
    assert again.returncode in (0, 1), again.stderr
    assert f"{4 - len(complete)} judged" in again.stderr
    assert f"{len(complete)} resumed" in again.stderr
    lines = result_items(out)
    assert sorted(x["case_id"] for x in lines) == sorted(
        json.loads(x)["id"] for x in (ROOT / "examples" / "meeting_summaries.jsonl").open()
    )


def test_a_cache_that_cannot_be_written_is_one_line(tmp_path: Path, model_path):
    args = _headings_run(model_path)
    full = _run_with_file_limit(args, 1000, {"ANVIL_CACHE_DIR": str(tmp_path / "cache")})
    assert full.returncode == 2, full.stderr
    (line,) = [x for x in full.stderr.splitlines() if x.strip()]
    assert line.startswith(f"Error: result cache {tmp_path / 'cache'}"), line
    assert "--no-cache" in line


def test_a_chain_of_1500_code_nodes_validates_and_walks(tmp_path: Path, model_path):
    path = write(tmp_path / "chain.toml", chain(1500))
    checked = CliRunner().invoke(main, ["validate", str(path)])
    assert checked.exit_code == 0, checked.output
    cases = write(tmp_path / "cases.jsonl", jsonl({"id": "a", "actual_output": "aaa"}))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        main,
        [
            *("eval", "--metric", str(path), "--data", str(cases), "--out", str(out)),
            *("--model", str(model_path), "--no-cache", "--no-reason"),
        ],
    )
    assert result.exit_code == 0, result.output
    (line,) = result_items(out)
    assert line["score"] == 1.0 and line["error"] is None
    assert len(line["trace"]["path"]) == 1500


def test_validate_names_the_node_and_the_bad_pattern(tmp_path: Path):
    path = write(tmp_path / "m.toml", code_node("regex", 'pattern = "([a-z"'))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"Error: {path}: node 'c': check 'regex': invalid pattern '([a-z': "
        "unterminated character set at position 1"
    )
