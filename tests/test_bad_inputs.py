"""Bad inputs to `anvil eval`, each through the CLI: exit code 2, one `Error:` line, no
traceback. Inputs are built in a temp dir; none of these reach a model decode."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main

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
