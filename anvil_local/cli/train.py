"""`anvil train`: teach the judge. `data` builds the training set from pinned public sources
(rendered as a metric's own question), `lora` trains an adapter on it, `convert` writes the
adapter as a GGUF file llama.cpp loads beside its base model."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from anvil_local import signals
from anvil_local.cli import options
from anvil_local.errors import DataError


@click.group()
def train() -> None:
    """Teach the judge on labelled pairs: data, lora, convert."""


@train.command("data")
@click.option(
    "--sources",
    "sources_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder of checkouts of the pinned source repositories (see docs/training.md).",
)
@click.option(
    "--cases",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Your own labelled cases (JSONL: input, actual_output, labels); each file is a "
    "source. Repeatable; without --sources only these are used.",
)
@options.TRAIN_LABEL
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="The training rows written (JSONL; replaced if it exists).",
)
@options.TRAIN_METRIC
@click.option(
    "--exclude",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Evaluation documents to keep out: hashed 8-grams (.txt) or cases (.jsonl, their "
    "`input`); a pair whose document shares 3 or more 8-grams is dropped. Repeatable.",
)
@click.option("--source", "only", multiple=True, help="Use only these sources (repeatable).")
@click.option(
    "--per-source",
    type=click.IntRange(2),
    default=3000,
    show_default=True,
    help="Pairs kept per source, half supported and half not.",
)
@click.option(
    "--max-words",
    type=click.IntRange(10),
    default=300,
    show_default=True,
    help="Longer documents are dropped.",
)
@click.option("--no-rules", is_flag=True, help="Leave out the rule-made pairs (FactCC style).")
@click.option(
    "--extrinsic",
    is_flag=True,
    help="Add rule-made pairs whose unsupported claim brings what the document lacks: a name "
    "from another document, a number it never states, or a sentence taken out of it.",
)
@click.option(
    "--attributes",
    is_flag=True,
    help="Add rule-made pairs whose unsupported claim is a sentence of the document with one "
    "detail it never states added: an age, a title, a description of a company, a place or time.",
)
@click.option(
    "--holdout",
    type=click.FloatRange(0, 0.5),
    default=0.05,
    show_default=True,
    help="Share of documents held out for validation.",
)
@options.SEED
@options.BASE_MODEL
def data_command(
    sources_dir: Path | None,
    cases: tuple[Path, ...],
    label: str,
    out_file: Path,
    metric_file: Path,
    exclude: tuple[Path, ...],
    only: tuple[str, ...],
    per_source: int,
    max_words: int,
    no_rules: bool,
    extrinsic: bool,
    attributes: bool,
    holdout: float,
    seed: int,
    model_name: str,
) -> None:
    """Build the training set: read the pinned sources (bytes checked), drop evaluation
    documents, balance the labels, render every pair as the metric's question, and print
    the counts per source."""
    from anvil_local.models import get_judge
    from anvil_local.run.output import check_writable
    from anvil_local.spec import load_metric
    from anvil_local.train.data import BuildPlan, collect, counts_table, rows, write_rows
    from anvil_local.train.render import Renderer
    from anvil_local.train.sources import SOURCES, source_named

    check_writable(out_file, "--out")
    if sources_dir is None and not cases:
        raise click.UsageError(
            "give --sources DIR (the pinned public sources), --cases FILE, or both"
        )
    if sources_dir is not None and not sources_dir.is_dir():
        raise DataError(f"--sources {sources_dir}: no such folder")
    if only:
        chosen = tuple(source_named(n) for n in only)
    else:
        chosen = SOURCES if sources_dir is not None else ()
    plan = BuildPlan(
        sources_dir,
        chosen,
        exclude,
        per_source,
        max_words,
        not no_rules,
        holdout,
        seed,
        cases,
        label,
        extrinsic=extrinsic,
        attributes=attributes,
    )
    pairs = collect(plan)
    if not pairs:
        raise DataError("no pair was kept: see the counts with -v")
    metric = load_metric(metric_file)
    renderer = Renderer(metric, get_judge(model_name))
    with click.progressbar(
        length=len(pairs), label="rendering", file=click.get_text_stream("stderr")
    ) as bar:
        written = write_rows(
            out_file, rows(pairs, renderer, plan, str(metric_file)), lambda _: bar.update(1)
        )
    for line in counts_table(plan):
        click.echo(line)
    click.echo(f"{written} rows written to {out_file}")


@train.command("lora")
@click.option(
    "--data",
    "data_file",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Training rows written by `anvil train data`.",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The run's folder: checkpoint, state.json and loss.jsonl.",
)
@options.BASE_MODEL
@click.option("--resume", is_flag=True, help="Continue the run in --out from its checkpoint.")
@click.option(
    "--init",
    "init_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Start from another run's adapter (its rank, alpha and projections) with a fresh "
    "optimizer: teach a trained judge more labels.",
)
@click.option("--rank", type=click.IntRange(1), default=8, show_default=True, help="LoRA rank.")
@click.option("--alpha", type=click.IntRange(1), default=16, show_default=True, help="LoRA alpha.")
@click.option(
    "--targets",
    default="all",
    show_default=True,
    help="The projections that carry the adapter, comma-separated (q_proj,k_proj,v_proj,o_proj,"
    "gate_proj,up_proj,down_proj), or all. Each one costs llama.cpp time a token at inference.",
)
@click.option(
    "--lr",
    type=click.FloatRange(0, min_open=True),
    default=2e-4,
    show_default=True,
    help="Learning rate (after a linear warm-up).",
)
@click.option(
    "--accumulate",
    type=click.IntRange(1),
    default=8,
    show_default=True,
    help="Rows per optimizer step.",
)
@click.option("--max-steps", type=click.IntRange(1), help="Stop after this many steps (this run).")
@click.option(
    "--max-minutes",
    type=click.FloatRange(0, min_open=True),
    help="Stop after this long (this run); a checkpoint is written first.",
)
@click.option(
    "--checkpoint-every",
    type=click.IntRange(1),
    default=25,
    show_default=True,
    help="Steps between checkpoints.",
)
@click.option(
    "--val-every",
    type=click.IntRange(1),
    default=50,
    show_default=True,
    help="Steps between validation passes (on the held-out rows).",
)
@click.option(
    "--val-rows",
    type=click.IntRange(0),
    default=64,
    show_default=True,
    help="Held-out rows read at each validation pass.",
)
@options.TRAIN_THREADS
@options.SEED
@click.option(
    "--device",
    default="cpu",
    show_default=True,
    help="torch device to train on (cuda with a GPU build of torch).",
)
def lora_command(
    data_file: Path,
    out_dir: Path,
    model_name: str,
    resume: bool,
    init_dir: Path | None,
    rank: int,
    alpha: int,
    targets: str,
    lr: float,
    accumulate: int,
    max_steps: int | None,
    max_minutes: float | None,
    checkpoint_every: int,
    val_every: int,
    val_rows: int,
    threads: int | None,
    seed: int,
    device: str,
) -> None:
    """Train a LoRA adapter for the judge on the CPU, from its own GGUF weights. Resumable:
    a checkpoint every N steps (and on Ctrl-C or --max-minutes), one loss line a step."""
    from anvil_local.models import resolve_model
    from anvil_local.train.lora import TrainConfig, Trainer, parse_targets, require_torch

    chosen = parse_targets(targets)
    if init_dir is not None:
        if resume:
            raise click.UsageError("--init starts a new run; --resume continues one: not both")
        context = click.get_current_context()
        given = [
            f"--{name}"
            for name in ("rank", "alpha", "targets")
            if context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
        ]
        if given:
            raise click.UsageError(f"--init takes its run's shape: leave out {', '.join(given)}")
    torch = require_torch()
    if threads:
        torch.set_num_threads(threads)
    base = resolve_model(model_name)
    config = TrainConfig(
        rank=rank,
        alpha=alpha,
        targets=chosen,
        lr=lr,
        accumulate=accumulate,
        seed=seed,
        val_every=val_every,
        val_rows=val_rows,
    )

    def report(point: dict) -> None:
        if "val_loss" in point:
            click.echo(
                f"step {point['step']}: validation loss {point['val_loss']:.4f}, "
                f"accuracy {point['val_accuracy']:.3f}",
                err=True,
            )
        elif point["step"] % 5 == 0:
            rate = point["tokens"] / max(point["seconds"], 1e-9)
            click.echo(
                f"step {point['step']}: loss {point['loss']:.4f} ({rate:.0f} tokens/s)", err=True
            )

    out_dir.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(
        out_dir, data_file, Path(base.path), config, resume, report, device, init=init_dir
    )
    state = trainer.run(max_steps, max_minutes, checkpoint_every)
    click.echo(
        f"{state.step} steps, {state.rows_done} rows, {state.tokens} tokens, "
        f"{state.seconds / 60:.1f} min of training; checkpoint in {out_dir}"
    )
    if signals.received() is not None:  # stopped by a signal: checkpoint kept, say so
        click.echo(
            f"Interrupted: the checkpoint in {out_dir} is kept; the same command with "
            "--resume goes on.",
            err=True,
        )
        sys.exit(signals.exit_status())


@train.command("convert")
@click.option(
    "--run",
    "run_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="A run folder of `anvil train lora` (its latest checkpoint is converted).",
)
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="The GGUF adapter written.",
)
@options.BASE_MODEL
@click.option(
    "--outtype",
    type=click.Choice(["f32", "f16"]),
    default="f32",
    show_default=True,
    help="The adapter's weight type (f16 halves the file and moves P(Yes) by up to ~0.02).",
)
@click.option(
    "--register",
    "name",
    metavar="NAME",
    help="Also register it as catalogue model NAME: its model card NAME.md beside --out and "
    "its entry NAME.toml (in the user catalogue, or beside --out in a checkout's models/).",
)
@click.option(
    "--data",
    "data_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The training rows, for the model card's data table (with --register).",
)
@click.option(
    "--description",
    default="SmolLM2 135M Instruct taught to judge faithfulness",
    show_default=True,
    help="The catalogue entry's description (with --register).",
)
def convert_command(
    run_dir: Path,
    out_file: Path,
    model_name: str,
    outtype: str,
    name: str | None,
    data_file: Path | None,
    description: str,
) -> None:
    """Write a trained adapter as a GGUF file llama.cpp loads beside the base model, and
    optionally its catalogue entry and model card."""
    from anvil_local.models.catalogue import get_entry, sha256_file
    from anvil_local.models.store import ensure_model
    from anvil_local.train.convert import convert_adapter
    from anvil_local.train.lora import ADAPTER, STATE, TrainState
    from anvil_local.train.ship import write_entry

    if not (run_dir / STATE).is_file():
        raise DataError(f"--run {run_dir}: no checkpoint ({STATE}) there")
    if name and data_file is None:
        raise click.UsageError("--register needs --data (the model card's data table)")
    base = get_entry(model_name)
    written = convert_adapter(run_dir / ADAPTER, out_file, ensure_model(base), outtype, name or "")
    click.echo(
        f"{out_file}: {written['tensors']} tensors, rank {written['rank']}, "
        f"{out_file.stat().st_size} bytes, sha256 {sha256_file(out_file)}"
    )
    if name:
        state = TrainState.from_json((run_dir / STATE).read_text())
        entry, card = write_entry(name, base, out_file, state, data_file, description)
        click.echo(f"catalogue entry {entry}, model card {card}")
