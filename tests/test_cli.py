"""CLI boundary: bad input is one `Error:` line and exit code 2, never a traceback."""

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.cli.options import SharedOption

ROOT = Path(__file__).resolve().parent.parent
HEADINGS = str(ROOT / "examples" / "headings.toml")
CASES = str(ROOT / "examples" / "meeting_summaries.jsonl")


def run(args):
    return CliRunner().invoke(main, args)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("args", "start"),
    [
        pytest.param(
            ["eval", "--metric", "nope.toml", "--data", CASES],
            "Error: nope.toml: no such metric file",
            id="unknown-metric-file",
        ),
        pytest.param(
            ["eval", "--metric", HEADINGS, "--data", "nope.jsonl"],
            "Error: nope.jsonl: no such file",
            id="unknown-data-file",
        ),
        pytest.param(
            ["eval", "--metric", HEADINGS, "--data", CASES, "--model", "/no/model.gguf"],
            "Error: no model file at /no/model.gguf",
            id="missing-model",
        ),
        pytest.param(
            ["eval", "--metric", HEADINGS, "--data", CASES, "--model", "nosuchmodel"],
            "Error: unknown model 'nosuchmodel'",
            id="unknown-model",
        ),
        pytest.param(
            ["eval", "--metric", HEADINGS, "--data", CASES, "--field", "nonsense"],
            "Error: --field expects param=column",
            id="bad-field",
        ),
        pytest.param(
            ["explain", "--metric", HEADINGS],
            "Error: give --case JSON, or --data FILE with --id ID",
            id="explain-no-case",
        ),
        pytest.param(
            ["explain", "--metric", HEADINGS, "--case", "{oops"],
            "Error: --case is not valid JSON",
            id="explain-bad-json",
        ),
        pytest.param(
            ["explain", "--metric", HEADINGS, "--data", CASES, "--id", "zzz"],
            f"Error: {CASES}: no case with id 'zzz'",
            id="explain-unknown-id",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, start):
    result = run(args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(start)
    assert len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_bad_jsonl_line_names_its_line(tmp_path: Path):
    data = write(tmp_path, "c.jsonl", '{"actual_output": "fine"}\n{"actual_output": \n')
    result = run(["eval", "--metric", HEADINGS, "--data", data])
    assert result.exit_code == 2
    assert result.output == f"Error: {data}:2: invalid JSON: Expecting value\n"


def test_missing_field_names_case_field_and_metric(tmp_path: Path):
    data = write(tmp_path, "c.jsonl", '{"id": "a", "input": "no output here"}\n')
    result = run(["eval", "--metric", HEADINGS, "--data", data])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {data}:1: case 'a' has no 'actual_output', which metric 'Summary headings' needs\n"
    )


def test_invalid_metric_file_is_exit_2(tmp_path: Path):
    bad = write(
        tmp_path,
        "bad.toml",
        'type = "dag"\nname = "x"\n[nodes.a]\ntype = "binary"\ncriteria = "Q"\n',
    )
    result = run(["eval", "--metric", bad, "--data", CASES])
    assert result.exit_code == 2
    assert result.output.startswith(
        f"Error: {bad}: node 'a': a judgement node needs a 'verdicts' list"
    )


def test_validate_reports_each_file(tmp_path: Path):
    bad = write(tmp_path, "bad.json", "[]")
    result = run(["validate", HEADINGS, bad])
    assert result.exit_code == 2
    assert f"{HEADINGS}: OK (DAGMetric 'Summary headings')" in result.output
    assert f"Error: {bad}: a metric file holds one object" in result.output
    assert run(["validate", HEADINGS]).exit_code == 0


def test_validate_names_the_members_of_a_panel_and_one_file_commands_refuse_it():
    panel = str(Path(HEADINGS).parent / "geval" / "summeval_panel.toml")
    result = run(["validate", panel])
    assert result.exit_code == 0
    names = "'Coherence', 'Consistency', 'Fluency', 'Relevance'"
    assert f"{panel}: OK (G-Eval panel of 4: {names})" in result.output
    refused = run(["export", panel])
    assert refused.exit_code == 2
    assert "holds several metrics" in refused.output
    assert "Traceback" not in refused.output


def test_help_texts_list_every_command():
    result = run(["--help"])
    for command in ("eval", "explain", "models", "steps", "validate"):
        assert command in result.output
    assert "--jobs" in run(["eval", "--help"]).output


# -- the command tree: help texts and shared options ------------------------------------

#: Flags that mean something different on each command that has them, so each command
#: declares its own: --data (cases to judge, labelled cases, one case's file, a run's
#: cases), --out (results, an exported metric, merged results), --format (convert to one,
#: measure several).
PER_COMMAND_FLAGS = {"--data", "--out", "--format"}


def commands(group: click.Group = main, path: tuple[str, ...] = ()):
    """(path, command) for every command and group under `group`, depth first."""
    for name, command in sorted(group.commands.items()):
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


def options_of(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and p.name != "help"]


def test_every_help_text_renders():
    assert run(["--help"]).exit_code == 0
    for path, _ in commands():
        result = run([*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert f"{' '.join(path)} [OPTIONS]" in result.output.splitlines()[0]


def test_a_flag_on_several_commands_is_declared_once_in_options_py():
    users: dict[str, set[tuple[str, ...]]] = {}
    for path, command in commands():
        for option in options_of(command):
            for flag in option.opts + option.secondary_opts:
                users.setdefault(flag, set()).add(path)
    shared = {flag for flag, paths in users.items() if len(paths) > 1} - PER_COMMAND_FLAGS
    assert {"--model", "--threads", "--n-ctx", "--field", "--no-cache", "--progress"} <= shared
    for path, command in commands():
        for option in options_of(command):
            if shared & set(option.opts):
                assert isinstance(option, SharedOption), (
                    f"`anvil {' '.join(path)}` declares {option.opts} itself: "
                    "use the declaration in anvil_local/cli/options.py"
                )


def test_only_options_py_makes_shared_options():
    package = ROOT / "anvil_local" / "cli"
    for path in package.glob("*.py"):
        if path.name != "options.py":
            assert "SharedOption" not in path.read_text(), path
            assert "_declare(" not in path.read_text(), path


def test_the_commands_that_load_a_judge_take_the_same_load_options():
    wanted = ("--model", "--n-ctx", "--threads", "--n-gpu-layers", "--batch-size")
    seen = {}
    for name in ("eval", "explain", "steps"):
        by_flag = {o.opts[0]: o.to_info_dict() for o in options_of(main.commands[name])}
        seen[name] = [by_flag[flag] for flag in wanted]
    assert seen["eval"] == seen["explain"] == seen["steps"]
    bench = {o.opts[0]: o.to_info_dict() for o in options_of(main.commands["bench"])}
    assert bench["--threads"] == seen["eval"][2]


@pytest.mark.parametrize("command", ["eval", "explain", "steps", "bench", "doctor"])
def test_model_help_names_the_default_a_run_really_gets(command):
    (model,) = [o for o in options_of(main.commands[command]) if "--model" in o.opts]
    # models.resolve: ANVIL_MODEL, else the host's tuned file (models.tuning.default_judge),
    # tuned by the first run that needs it; the doctor resolves with tune=False
    assert "$ANVIL_MODEL, else the file `anvil models tune` chose for this host" in model.help
    if command == "doctor":
        assert "the doctor never tunes" in model.help
    else:
        assert "the first run without --model tunes" in model.help
