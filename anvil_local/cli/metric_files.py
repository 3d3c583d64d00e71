"""The commands about one metric file: `validate`, `export`, `steps` and `explain`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from anvil_local.cli import options
from anvil_local.cli.root import EXIT_BAD_INPUT
from anvil_local.errors import AnvilError, DataError


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(files: tuple[Path, ...]) -> None:
    """Check metric files with the same rules as the Python classes."""
    from anvil_local.spec import load_metrics

    bad = 0
    for path in files:
        try:
            metrics = load_metrics(path)
        except AnvilError as exc:
            click.echo(f"Error: {exc.one_line()}", err=True)
            bad += 1
            continue
        if len(metrics) == 1:
            click.echo(f"{path}: OK ({type(metrics[0]).__name__} {metrics[0].name!r})")
        else:
            names = ", ".join(repr(m.name) for m in metrics)
            click.echo(f"{path}: OK (G-Eval panel of {len(metrics)}: {names})")
    if bad:
        sys.exit(EXIT_BAD_INPUT)


@click.command()
@click.argument("metric_file", type=click.Path(path_type=Path))
@click.option(
    "--to",
    "target",
    type=click.Choice(["anvil", "deepeval", "deepeval-upload"]),
    default="anvil",
    show_default=True,
    help="anvil: our JSON metric file; deepeval: the DAG JSON DeepEval's "
    "DeepAcyclicGraph.to_dict() writes (a DAG or a conversational DAG only); "
    "deepeval-upload: the same wrapped with the metric's name and multiTurn flag.",
)
@click.option(
    "--out",
    "out_file",
    default=None,
    type=click.Path(path_type=Path),
    help="Write here (default: stdout).",
)
def export(metric_file: Path, target: str, out_file: Path | None) -> None:
    """Write a metric file (TOML, JSON or DeepEval DAG JSON) in another shape. DeepEval's
    DAG JSON has no room for the threshold, soft mode, a G-Eval rubric, examples or
    calibration: those are lost."""
    from anvil_local.spec import load_metric, metric_definition
    from anvil_local.spec.deepeval import to_deepeval

    metric = load_metric(metric_file)
    data = metric_definition(metric)  # with any fitted calibration
    if target != "anvil":
        data = to_deepeval(metric.to_dict(), wrapper=target == "deepeval-upload")
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if out_file is None:
        click.echo(text, nl=False)
        return
    from anvil_local.run.output import check_writable

    check_writable(out_file, "--out")
    out_file.write_text(text, encoding="utf-8")
    click.echo(f"wrote {out_file}", err=True)


@click.command()
@options.METRIC
@options.JUDGE
def steps(metric_file: Path, **load: Any) -> None:
    """Print a G-Eval metric's evaluation steps as TOML, to pin them in the file."""
    from anvil_local.models import open_session
    from anvil_local.spec import load_metric

    metric = load_metric(metric_file)
    if not hasattr(metric, "steps_for"):  # GEval, ConversationalGEval, ArenaGEval
        raise DataError(f"{metric_file}: steps exist only for G-Eval metrics")
    model = options.judge_from(load)
    session = open_session(model or metric.model, options.settings_from(load))
    found = metric.steps_for(session)
    items = ",\n".join(f"  {json.dumps(s, ensure_ascii=False)}" for s in found)
    click.echo(f"# {metric.name}: evaluation steps for model {session.model.name}")
    click.echo(f"evaluation_steps = [\n{items},\n]")


@click.command()
@options.METRIC
@click.option("--case", "case_json", default=None, help="One test case as a JSON object.")
@click.option(
    "--data",
    "data_file",
    default=None,
    type=click.Path(path_type=Path),
    help="A case file; pick the case with --id.",
)
@click.option("--id", "case_id", default=None, help="The case id within --data.")
@options.FIELDS
@click.option("--soft", is_flag=True, help="DAG: also walk other branches; show expected score.")
@click.option(
    "--decode-check",
    is_flag=True,
    help="DAG: also show what a grammar-constrained greedy decoder answers at each node.",
)
@options.NO_REASON
@options.JUDGE
def explain(
    metric_file: Path,
    case_json: str | None,
    data_file: Path | None,
    case_id: str | None,
    fields: tuple[str, ...],
    soft: bool,
    decode_check: bool,
    no_reason: bool,
    **load: Any,
) -> None:
    """Show one case's walk (DAG) or score distribution (G-Eval), readably."""
    from anvil_local.metrics.render import render_result
    from anvil_local.models import open_session
    from anvil_local.run.dataset import case_from_row, parse_field_map, read_cases
    from anvil_local.spec import load_metric

    metric = load_metric(metric_file)
    if hasattr(metric, "soft"):  # a DAG
        metric.soft = metric.soft or soft
        metric.decode_check = decode_check
    mapping = parse_field_map(fields)
    if case_json is not None:
        try:
            raw = json.loads(case_json)
        except json.JSONDecodeError as exc:
            raise DataError(f"--case is not valid JSON: {exc.msg}") from exc
        case = case_from_row(raw, mapping, "--case")
    elif data_file is not None and case_id is not None:
        rows = [r for r in read_cases(data_file, mapping) if r.case_id == case_id]
        if not rows:
            raise DataError(f"{data_file}: no case with id {case_id!r}")
        case = rows[0].case
    else:
        raise DataError("give --case JSON, or --data FILE with --id ID")
    model = options.judge_from(load)
    session = open_session(model or metric.model, options.settings_from(load))
    result = metric.run(case, session, include_reason=False if no_reason else None)
    click.echo(f"case {case.id or '(no id)'}, model {session.model.name}")
    click.echo(render_result(result))
