"""`anvil`: parse, call the library, render. Any AnvilError becomes one `Error: ...` line
with exit code 2; Ctrl-C exits 130."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from anvil_local.errors import AnvilError, DataError, WorkerCrash

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_CRASHED = 3  # a worker process died (WorkerCrash.exit_code)
EXIT_INTERRUPTED = 130


class AnvilGroup(click.Group):
    """Turns library errors into one line on stderr at the CLI boundary."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AnvilError as exc:
            click.echo(f"Error: {exc.one_line()}", err=True)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:  # one line too, with where to find help
            command = exc.ctx.command_path if exc.ctx else "anvil"
            click.echo(f"Error: {exc.format_message()} (see `{command} --help`)", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(EXIT_INTERRUPTED)


@click.group(cls=AnvilGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="anvil-local")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def main(verbose: int) -> None:
    """Offline LLM-as-a-judge: G-Eval and DAG metrics on a local GGUF model."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="anvil: %(message)s", stream=sys.stderr)


# -- shared options ---------------------------------------------------------------------


def model_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--model and the load settings, shared by every command that runs the judge."""
    options = [
        click.option(
            "--model",
            "model",
            default=None,
            metavar="NAME|PATH",
            help="Catalogue name or .gguf path (default: $ANVIL_MODEL, else the default "
            "judge tuned for this host, else the catalogue default).",
        ),
        click.option(
            "--n-ctx",
            type=click.IntRange(256),
            default=4096,
            show_default=True,
            help="Context size in tokens.",
        ),
        click.option(
            "--threads",
            type=click.IntRange(1),
            default=None,
            help="CPU threads per process (default: the count `anvil models tune` chose, else all "
            "cores; split over --jobs).",
        ),
        click.option(
            "--n-gpu-layers",
            type=click.IntRange(-1),
            default=0,
            show_default=True,
            help="Layers to offload to a GPU (-1: all); needs a CUDA build of "
            'llama-cpp-python: CMAKE_ARGS="-DGGML_CUDA=on".',
        ),
        click.option(
            "--batch-size",
            type=click.IntRange(2),
            default=512,
            show_default=True,
            help="Prompt tokens per llama.cpp decode batch.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def settings_from(kwargs: dict[str, Any]) -> Any:
    from anvil_local.judge.settings import JudgeSettings

    return JudgeSettings(
        n_ctx=kwargs.pop("n_ctx"),
        threads=kwargs.pop("threads"),
        n_gpu_layers=kwargs.pop("n_gpu_layers"),
        n_batch=kwargs.pop("batch_size"),
    )


def _progress_bar(total: int, label: str, enabled: bool, show_item: bool = False):
    if not enabled or total <= 0:
        return None
    return click.progressbar(
        length=total,
        label=label,
        file=sys.stderr,
        show_eta=True,
        show_pos=True,
        width=24,
        item_show_func=(lambda item: item) if show_item else None,
    )


class LineProgress:
    """Progress for logs (not a terminal): a line at the start, every 10 s, and at the end."""

    def __init__(self, label: str, every: float = 10.0) -> None:
        self.label = label
        self.every = every
        self.started = time.monotonic()
        self.last = 0.0

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done not in (1, total) and now - self.last < self.every:
            return
        self.last = now
        rate = (now - self.started) / done
        left = rate * (total - done)
        click.echo(
            f"{self.label} {done}/{total} ({done / total:.0%}), {rate:.2f} s/result, "
            f"about {left:.0f} s left",
            err=True,
        )


# -- models -----------------------------------------------------------------------------


@main.group()
def models() -> None:
    """The judge model catalogue: list, pull, add, convert, tune, path, verify."""


@models.command("list")
def models_list() -> None:
    """Known models, and whether each is on this machine."""
    from anvil_local.models.catalogue import entries
    from anvil_local.models.tuning import load_profile

    profile = load_profile()
    tuned = profile.use if profile is not None else None
    rows = [("NAME", "KIND", "FORMAT", "SIZE", "PULLED", "LICENCE", "")]
    for e in entries():
        pulled = "yes" if e.store_path().is_file() else "no"
        role = "default" if e.default else ""
        if tuned is not None and e.name == tuned:
            role = "default (tuned here)" if e.default else "tuned default here"
        rows.append(
            (
                e.name,
                e.kind or "-",
                e.format or "-",
                f"{e.size / 1e6:.0f} MB",
                pulled,
                e.licence or "-",
                role,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


@models.command("pull")
@click.argument("name")
@click.option("--force", is_flag=True, help="Fetch again even if the file is present.")
def models_pull(name: str, force: bool) -> None:
    """Fetch a catalogue model and verify its sha256."""
    from anvil_local.models.catalogue import get_entry
    from anvil_local.models.store import pull

    entry = get_entry(name)
    bar = _progress_bar(entry.size, f"{entry.name}", sys.stderr.isatty())
    if bar is None:
        path = pull(entry, force=force)
    else:
        with bar:
            path = pull(entry, progress=bar.update, force=force)
    click.echo(f"{entry.name}: {path}")


@models.command("add")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--name", default=None, help="Catalogue name (default: from the file name).")
def models_add(path: Path, name: str | None) -> None:
    """Register a local GGUF file under a name (the file stays where it is)."""
    from anvil_local.models.catalogue import add_local

    entry = add_local(path, name)
    click.echo(f"added {entry.name}: {entry.local_path} (sha256 {entry.sha256})")


@models.command("convert")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    required=True,
    type=click.Choice(["Q8_0", "Q4_0", "F16"], case_sensitive=False),
    help="Weight format: Q8_0 and Q4_0 have fast llama.cpp CPU kernels on x86-64.",
)
@click.option("--force", is_flag=True, help="Convert again even if the file is present.")
def models_convert(name: str, fmt: str, force: bool) -> None:
    """Convert a catalogue model to another weight format (llama.cpp's quantizer); the file
    is stored beside the pulled ones and registered as NAME-FORMAT."""
    from anvil_local.models.store import convert

    entry = convert(name, fmt, force=force)
    click.echo(
        f"added {entry.name}: {entry.local_path} (sha256 {entry.sha256}, from {entry.source})"
    )


@models.command("tune")
@click.option(
    "--format",
    "formats",
    multiple=True,
    type=click.Choice(["Q8_0", "F16"], case_sensitive=False),
    help="A format to convert to and measure (repeatable; default: Q8_0). Only formats with "
    "more bits per weight than the shipped file, so the judge stays the same judge.",
)
@click.option(
    "--threads",
    "thread_counts",
    multiple=True,
    type=click.IntRange(1),
    help="A thread count to measure (repeatable; default: all cores and half of them).",
)
@click.option(
    "--rounds",
    type=click.IntRange(1),
    default=3,
    show_default=True,
    help="Interleaved rounds; a choice whose rounds disagree is not recorded.",
)
def models_tune(formats: tuple[str, ...], thread_counts: tuple[int, ...], rounds: int) -> None:
    """Choose the file and thread count of the default judge for this host: convert it to
    the formats llama.cpp reads fastest, measure each at a few thread counts in interleaved
    rounds, and record the choice (runs without --model use it; the first such run tunes by
    itself). Nothing is recorded when other processes used the CPU meanwhile or the rounds
    disagree (exit 1)."""
    from anvil_local.models.tuning import DEFAULT_FORMATS, profile_path, tune

    found = tune(
        formats=formats or DEFAULT_FORMATS,
        threads=thread_counts or None,
        rounds=rounds,
        progress=lambda text: click.echo(text, err=True),
    )
    profile = found.profile
    click.echo(_tuning_table(profile))
    if not found.recorded:
        click.echo(
            f"not recorded: {found.reason}; runs use the shipped file on all cores "
            "(run this again on a quiet machine)"
        )
        sys.exit(EXIT_FAILED)
    click.echo(f"default judge here: {profile.use}, {profile.threads} threads ({profile_path()})")


def _tuning_table(profile: Any) -> str:
    rows = [
        ("MODEL", "FORMAT", "THREADS", "PROMPT TOK/S", "GENERATED TOK/S", "PROBE S", "SPREAD",
         "OTHERS' CPU", ""),
    ]  # fmt: skip
    for m in sorted(profile.measured, key=lambda m: m.seconds):
        chosen = "chosen" if (m.model, m.threads) == (profile.use, profile.threads) else ""
        rows.append(
            (
                m.model,
                m.format or "-",
                str(m.threads),
                f"{m.prompt_tokens_per_s:.0f}",
                f"{m.generated_tokens_per_s:.0f}",
                f"{m.seconds:.2f}",
                f"{m.spread:.0%}",
                f"{m.others_cpu:.0%}",
                chosen,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


@models.command("path")
@click.argument("name")
def models_path(name: str) -> None:
    """Print where a model's file is (or will be) on this machine."""
    from anvil_local.models.catalogue import get_entry

    click.echo(str(get_entry(name).store_path()))


@models.command("verify")
@click.argument("name")
def models_verify(name: str) -> None:
    """Re-hash a pulled model and compare with the catalogue's sha256."""
    from anvil_local.models.catalogue import get_entry
    from anvil_local.models.store import verify

    entry = get_entry(name)
    path = verify(entry)
    click.echo(f"{entry.name}: OK sha256 {entry.sha256} ({path})")


# -- doctor ---------------------------------------------------------------------------


@main.command()
@click.option(
    "--model",
    default=None,
    metavar="NAME|PATH",
    help="Model for the test decode and throughput probe (default: the catalogue default).",
)
@click.option("--threads", type=click.IntRange(1), default=None, help="Threads for the probe.")
@click.option("--no-probe", is_flag=True, help="Skip the test decode and throughput probe.")
def doctor(model: str | None, threads: int | None, no_probe: bool) -> None:
    """Check that this install can run the judge: versions, the native library against this
    CPU, directories, models, and a few-second throughput probe. Exit 0: usable; 1: not."""
    from anvil_local.doctor import diagnose, render

    findings = diagnose(model, threads, probe=not no_probe)
    click.echo(render(findings))
    sys.exit(EXIT_FAILED if any(f.problem for f in findings) else 0)


# -- bench ------------------------------------------------------------------------------


@main.command()
@click.option(
    "--suite", default=None, metavar="NAME|FILE", help="A bench suite (data, metrics, labels)."
)
@click.option(
    "--data",
    "data_file",
    default=None,
    type=click.Path(path_type=Path),
    help="Labelled cases (JSONL).",
)
@click.option(
    "--label",
    default=None,
    metavar="labels.NAME",
    help="The label every --metric is compared with.",
)
@click.option(
    "--metric",
    "metric_files",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A metric file (repeatable); a G-Eval panel file brings all its members.",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="NAME|PATH",
    help="Judge model (repeatable; default: the catalogue default).",
)
@click.option("--limit", type=click.IntRange(2), default=None, help="The first N cases.")
@click.option("--docs", type=click.IntRange(1), default=None, help="The first N documents.")
@click.option(
    "--report",
    "report_dir",
    default=None,
    type=click.Path(path_type=Path),
    help="Write bench.json, bench.md, report.html and the results files here.",
)
@click.option("--no-cache", is_flag=True, help="Bypass the result cache.")
@click.option(
    "--threads",
    type=click.IntRange(1),
    default=None,
    help="CPU threads (default: the count `anvil models tune` chose, else all cores).",
)
@click.option("--progress/--no-progress", default=None, help="Progress lines on stderr.")
@click.option(
    "--fit-calibration",
    is_flag=True,
    help="Fit each metric's score -> label map on half the documents, report it on the other "
    "half, and write it into the metric file (per model).",
)
def bench(
    suite: str | None,
    data_file: Path | None,
    label: str | None,
    metric_files: tuple[Path, ...],
    models: tuple[str, ...],
    limit: int | None,
    docs: int | None,
    report_dir: Path | None,
    no_cache: bool,
    threads: int | None,
    progress: bool | None,
    fit_calibration: bool,
) -> None:
    """Measure how well judges (model + metric) agree with human labels, and what they cost."""
    from anvil_local.bench.cli import run_bench

    text = run_bench(
        suite=suite,
        data_file=data_file,
        label=label,
        metric_files=metric_files,
        models=models,
        limit=limit,
        docs=docs,
        report_dir=report_dir,
        use_cache=not no_cache,
        threads=threads,
        progress=LineProgress("judging") if (progress is not False) else None,
        fit_calibration=fit_calibration,
    )
    click.echo(text, nl=False)


# -- metric files -----------------------------------------------------------------------


@main.command()
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


@main.command()
@click.argument("metric_file", type=click.Path(path_type=Path))
@click.option(
    "--to",
    "target",
    type=click.Choice(["anvil", "deepeval", "deepeval-upload"]),
    default="anvil",
    show_default=True,
    help="anvil: our JSON metric file; deepeval: the DAG JSON DeepEval's "
    "DeepAcyclicGraph.to_dict() writes (a DAG only); deepeval-upload: the same wrapped "
    "with the metric's name.",
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
    from anvil_local.registry import metric_definition
    from anvil_local.spec import load_metric
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


@main.command()
@click.option(
    "--metric",
    "metric_file",
    required=True,
    type=click.Path(path_type=Path),
    help="A GEval metric file given by criteria.",
)
@model_options
def steps(metric_file: Path, model: str | None, **kwargs: Any) -> None:
    """Print a G-Eval metric's evaluation steps as TOML, to pin them in the file."""
    from anvil_local.metrics.geval import GEval
    from anvil_local.models import open_session
    from anvil_local.spec import load_metric

    metric = load_metric(metric_file)
    if not isinstance(metric, GEval):
        raise DataError(f"{metric_file}: steps exist only for GEval metrics")
    session = open_session(model, settings_from(kwargs))
    found = metric.steps_for(session)
    items = ",\n".join(f"  {json.dumps(s, ensure_ascii=False)}" for s in found)
    click.echo(f"# {metric.name}: evaluation steps for model {session.model.name}")
    click.echo(f"evaluation_steps = [\n{items},\n]")


# -- explain ----------------------------------------------------------------------------


@main.command()
@click.option("--metric", "metric_file", required=True, type=click.Path(path_type=Path))
@click.option("--case", "case_json", default=None, help="One test case as a JSON object.")
@click.option(
    "--data",
    "data_file",
    default=None,
    type=click.Path(path_type=Path),
    help="A case file; pick the case with --id.",
)
@click.option("--id", "case_id", default=None, help="The case id within --data.")
@click.option("--field", "fields", multiple=True, metavar="PARAM=COLUMN")
@click.option("--soft", is_flag=True, help="DAG: also walk other branches; show expected score.")
@click.option(
    "--decode-check",
    is_flag=True,
    help="DAG: also show what a grammar-constrained greedy decoder answers at each node.",
)
@click.option("--no-reason", is_flag=True, help="Do not generate a reason.")
@model_options
def explain(
    metric_file: Path,
    case_json: str | None,
    data_file: Path | None,
    case_id: str | None,
    fields: tuple[str, ...],
    soft: bool,
    decode_check: bool,
    no_reason: bool,
    model: str | None,
    **kwargs: Any,
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
    session = open_session(model, settings_from(kwargs))
    result = metric.run(case, session, include_reason=False if no_reason else None)
    click.echo(f"case {case.id or '(no id)'}, model {session.model.name}")
    click.echo(render_result(result))


# -- eval -------------------------------------------------------------------------------


@main.command("eval")
@click.option(
    "--metric",
    "metric_files",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path),
    help="A metric file (repeatable); a G-Eval panel file brings all its members.",
)
@click.option(
    "--data",
    "data_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Test cases: JSONL, a JSON array, or CSV.",
)
@click.option(
    "--out",
    "out_file",
    default=None,
    type=click.Path(path_type=Path),
    help="Results JSONL (appended; re-running resumes). Default: stdout.",
)
@click.option(
    "--junit",
    "junit_file",
    default=None,
    type=click.Path(path_type=Path),
    help="Also write JUnit XML.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Worker processes, each loading the model once.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "pool", "ray"]),
    default=None,
    help="Where pairs are judged: this process, --jobs worker processes (default when "
    "--jobs > 1), or --jobs Ray actors (needs the [ray] extra).",
)
@click.option(
    "--ray-address",
    default=None,
    metavar="ADDRESS",
    help="Ray cluster to use with --executor ray (default: start a local Ray).",
)
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Judge only shard I of N (stable by prompt-prefix group); join with `anvil merge`.",
)
@click.option("--no-cache", is_flag=True, help="Bypass the result cache.")
@click.option("--no-reason", is_flag=True, help="Generate no reasons (faster).")
@click.option("--fail-fast", is_flag=True, help="Stop at the first case-level error.")
@click.option(
    "--field",
    "fields",
    multiple=True,
    metavar="PARAM=COLUMN",
    help="Read a test-case field from another column (repeatable).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar (default: on when stderr is a terminal).",
)
@model_options
def eval_command(
    metric_files: tuple[Path, ...],
    data_file: Path,
    out_file: Path | None,
    junit_file: Path | None,
    jobs: int,
    executor: str | None,
    ray_address: str | None,
    shard: str | None,
    no_cache: bool,
    no_reason: bool,
    fail_fast: bool,
    fields: tuple[str, ...],
    progress: bool | None,
    model: str | None,
    **kwargs: Any,
) -> None:
    """Evaluate a dataset against metric files. Exit 0: all passed; 1: some case failed
    its threshold or errored; 2: bad input (or llama.cpp cannot run here); 3: a worker
    process crashed (results written so far are kept)."""
    from anvil_local.run.dataset import parse_field_map, read_cases
    from anvil_local.run.evaluate import evaluate
    from anvil_local.run.executors import make_executor
    from anvil_local.run.output import check_writable
    from anvil_local.run.plan import Shard
    from anvil_local.run.sinks import JUnitSink, SummarySink
    from anvil_local.spec import load_metrics

    settings = settings_from(kwargs)
    if out_file is not None:
        check_writable(out_file, "--out")
    if junit_file is not None:
        check_writable(junit_file, "--junit")
    if ray_address is not None and executor != "ray":
        raise DataError("--ray-address needs --executor ray")
    chosen_shard = Shard.parse(shard) if shard is not None else None
    metrics = [m for path in metric_files for m in load_metrics(path)]
    rows = read_cases(data_file, parse_field_map(fields))
    tty = sys.stderr.isatty()
    show = tty if progress is None else progress
    sinks: list[Any] = [CliProgress(stream_lines=out_file is None, show=show, tty=tty)]
    if junit_file is not None:
        sinks.append(JUnitSink(junit_file))
    sinks.append(SummarySink(out_file))
    crash: WorkerCrash | None = None
    try:
        outcome = evaluate(
            rows,
            metrics,
            model=model,
            settings=settings,
            jobs=jobs,
            executor=make_executor(executor, jobs, ray_address=ray_address),
            shard=chosen_shard,
            use_cache=not no_cache,
            include_reason=False if no_reason else None,
            fail_fast=fail_fast,
            out=out_file,
            sinks=sinks,
            source=str(data_file),
        )
    except WorkerCrash as exc:
        crash, outcome = exc, exc.outcome  # its JUnit and summary are written; then fail
    if crash is not None:
        raise crash
    if outcome.interrupted:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(0 if outcome.all_passed else EXIT_FAILED)


class CliProgress:
    """A sink: each line to stdout when there is no --out, and progress on stderr (a bar
    on a terminal, a line every 10 s in logs), closed before the summary is printed."""

    def __init__(self, stream_lines: bool, show: bool, tty: bool) -> None:
        self.stream_lines = stream_lines
        self.show = show
        self.lines = LineProgress("judging") if show and not tty else None
        self.bar: Any = None
        self.started = time.monotonic()
        self.done = 0
        self.total = 0

    def start(self, plan: Any) -> None:
        self.total = plan.total

    def accept(self, item: Any) -> None:
        self.done += 1
        if self.stream_lines:
            click.echo(json.dumps(item.line.to_dict(), ensure_ascii=False))
        total = max(self.total, self.done)
        if self.lines is not None:
            self.lines.update(self.done, total)
        elif self.show:
            if self.bar is None:
                self.bar = _progress_bar(total, "judging", True, show_item=True)
                self.bar.__enter__()
            rate = (time.monotonic() - self.started) / self.done
            self.bar.update(1, current_item=f"{rate:.2f} s/result")

    def finish(self, outcome: Any) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


# -- merge ------------------------------------------------------------------------------


@main.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(path_type=Path),
    help="The merged results file (replaced if it exists).",
)
@click.option(
    "--data",
    "data_file",
    default=None,
    type=click.Path(path_type=Path),
    help="The run's cases file: with --metric, report the pairs no shard judged.",
)
@click.option(
    "--metric",
    "metric_files",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The run's metric files (repeatable; with --data).",
)
@click.option("--field", "fields", multiple=True, metavar="PARAM=COLUMN")
def merge(
    inputs: tuple[Path, ...],
    out_file: Path,
    data_file: Path | None,
    metric_files: tuple[Path, ...],
    fields: tuple[str, ...],
) -> None:
    """Join the results files of `anvil eval --shard` runs: one line per (case, metric),
    one model throughout. Exit 0: complete; 1: some pair is missing or an error."""
    from anvil_local.run.merge import merge_results
    from anvil_local.run.output import check_writable

    check_writable(out_file, "--out")
    expected = None
    if data_file is not None or metric_files:
        if data_file is None or not metric_files:
            raise DataError("--data and --metric go together (the pairs the run asked for)")
        from anvil_local.run.dataset import parse_field_map, read_cases
        from anvil_local.spec import load_metrics

        metrics = [m for path in metric_files for m in load_metrics(path)]
        rows = read_cases(data_file, parse_field_map(fields))
        expected = [(row.case_id, metric.name) for row in rows for metric in metrics]
    report = merge_results(inputs, out_file, expected)
    click.echo(
        f"merged {len(inputs)} files into {out_file}: {report.lines} lines "
        f"({report.duplicates} duplicates dropped, {report.errors} errors), "
        f"model {report.model or '-'}",
        err=True,
    )
    for case_id, metric in report.missing[:20]:
        click.echo(f"missing: case {case_id!r} metric {metric!r}", err=True)
    if len(report.missing) > 20:
        click.echo(f"... and {len(report.missing) - 20} more missing pairs", err=True)
    sys.exit(EXIT_FAILED if report.missing or report.errors else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
