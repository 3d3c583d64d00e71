"""Every option that more than one command takes, declared once, with the default each one
really has. Where a flag means something else on another command (`anvil doctor --model`
probes rather than judges and never tunes), that meaning is declared here too, next to the
first, so the difference is on one screen. --data, --out and --format mean something else on
every command that has them, so each command declares its own.

Each option here is a `SharedOption`: the tests check that a flag found on several commands
comes from this module."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from anvil_local.judge.settings import JudgeSettings

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class SharedOption(click.Option):
    """An option declared in this module (the marker the tests look for)."""


def _declare(*decls: str, **attrs: Any) -> Decorator:
    return click.option(*decls, cls=SharedOption, **attrs)


def _all(*options: Decorator) -> Decorator:
    """Several options as one decorator, listed in --help in the order given."""

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return apply


# -- the judge model ----------------------------------------------------------------------

#: What a run without --model judges with (`anvil_local.models.resolve_model`, then
#: `models.tuning.default_judge`).
DEFAULT_JUDGE = (
    "$ANVIL_MODEL, else the file `anvil models tune` chose for this host (the first run "
    "without --model tunes; until a tuning is recorded, the catalogue default as shipped)"
)

MODEL = _declare(
    "--model",
    "model",
    default=None,
    metavar="NAME|PATH",
    help=f"Judge model: a catalogue name or a .gguf path. Default: {DEFAULT_JUDGE}.",
)

MODELS = _declare(
    "--model",
    "models",
    multiple=True,
    metavar="NAME|PATH",
    help="Judge model: a catalogue name or a .gguf path; repeatable, each judges the same "
    f"cases and they are compared. Default: one run on {DEFAULT_JUDGE}.",
)

PROBE_MODEL = _declare(
    "--model",
    "probe_model",
    default=None,
    metavar="NAME|PATH",
    help="Model for the test decode and throughput probe. Default: $ANVIL_MODEL, else the "
    "file `anvil models tune` chose for this host, else the catalogue default as shipped "
    "(the doctor never tunes).",
)

SERVE_MODELS = _declare(
    "--model",
    "models",
    multiple=True,
    metavar="NAME|PATH",
    help="A model to serve: a catalogue name (an adapter too) or a .gguf path; repeatable, "
    "requests pick one by its name. Default: the default judge, $ANVIL_MODEL else the "
    "file `anvil models tune` chose for this host.",
)

KIT_MODELS = _declare(
    "--model",
    "models",
    multiple=True,
    metavar="NAME",
    help="A catalogue model to carry (repeatable; an adapter brings its base). Default: the "
    "default judge, and the trained adapter smollm2-135m-faithful where the catalogue has it.",
)

# -- load settings (`anvil_local.judge.settings.JudgeSettings`) ---------------------------

N_CTX = _declare(
    "--n-ctx",
    type=click.IntRange(256),
    default=4096,
    show_default=True,
    help="Context size in tokens.",
)

THREADS = _declare(
    "--threads",
    type=click.IntRange(1),
    default=None,
    help="CPU threads per judge process. Default: the count `anvil models tune` chose for "
    "this host, else all cores; under `anvil eval --jobs N`, that divided by N.",
)

N_GPU_LAYERS = _declare(
    "--n-gpu-layers",
    type=click.IntRange(-1),
    default=0,
    show_default=True,
    help="Layers to offload to a GPU (-1: all); needs a CUDA build of "
    'llama-cpp-python: CMAKE_ARGS="-DGGML_CUDA=on".',
)

BATCH_SIZE = _declare(
    "--batch-size",
    type=click.IntRange(2),
    default=512,
    show_default=True,
    help="Prompt tokens per llama.cpp decode batch.",
)

JUDGE_URL = _declare(
    "--judge-url",
    "judge_urls",
    multiple=True,
    metavar="URL",
    help="Judge on a System One decision server instead of a local model (anvil serve, vLLM, "
    "llama-server, Ollama, a hosted one); repeatable: servers of the same model share the "
    "work. Default: $ANVIL_JUDGE_URL (comma-separated). Key: $ANVIL_JUDGE_KEY.",
)

JUDGE_MODEL = _declare(
    "--judge-model",
    default=None,
    metavar="NAME",
    help="The model to ask the --judge-url servers for. Default: $ANVIL_JUDGE_MODEL, else "
    "the server's only (or first) model.",
)

#: --model, a decision server instead, and the load settings: every command that judges.
JUDGE = _all(MODEL, JUDGE_URL, JUDGE_MODEL, N_CTX, THREADS, N_GPU_LAYERS, BATCH_SIZE)


def judge_from(kwargs: dict[str, Any]) -> str | None:
    """The judge of --model / --judge-url / --judge-model, taken out of a command's kwargs:
    a model name or path, a decision server spec (`URL[,URL...]#MODEL`), or None."""
    import os

    model = kwargs.pop("model", None)
    urls = kwargs.pop("judge_urls", ())
    judge_model = kwargs.pop("judge_model", None)
    if judge_model is not None and not urls:  # a model of the $ANVIL_JUDGE_URL servers
        urls = tuple(u for u in os.environ.get("ANVIL_JUDGE_URL", "").split(",") if u.strip())
        if not urls:
            raise click.UsageError("--judge-model names a model of the --judge-url servers")
    if urls and model is not None:
        raise click.UsageError("give --model (a local judge) or --judge-url (a server), not both")
    if not urls:
        return model
    for url in urls:
        if not url.startswith(("http://", "https://")) or "#" in url:
            raise click.UsageError(f"--judge-url takes http(s)://host[:port], got {url!r}")
    joined = ",".join(u.rstrip("/") for u in urls)
    return f"{joined}#{judge_model}" if judge_model else joined


PROBE_THREADS = _declare(
    "--threads",
    "probe_threads",
    type=click.IntRange(1),
    default=None,
    help="Threads for the probe. Default: all cores (without --model, the tuning check also "
    "probes at the tuned count).",
)

TUNE_THREADS = _declare(
    "--threads",
    "thread_counts",
    multiple=True,
    type=click.IntRange(1),
    help="A thread count to measure (repeatable; default: all cores and half of them).",
)


def settings_from(kwargs: dict[str, Any]) -> JudgeSettings:
    """The JudgeSettings of JUDGE's load options, taken out of a command's kwargs."""
    from anvil_local.judge.settings import JudgeSettings

    return JudgeSettings(
        n_ctx=kwargs.pop("n_ctx"),
        threads=kwargs.pop("threads"),
        n_gpu_layers=kwargs.pop("n_gpu_layers"),
        n_batch=kwargs.pop("batch_size"),
    )


JOBS = _declare(
    "--jobs",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Worker processes, each loading the model once (no more than the prompt-prefix "
    "groups, and the memory, allow; the clamp is said in one line). With --judge-url: "
    "requests in flight per server.",
)

# -- what a run reads ---------------------------------------------------------------------

METRIC = _declare(
    "--metric",
    "metric_file",
    required=True,
    type=click.Path(path_type=Path),
    help="A metric file (TOML, JSON or DeepEval DAG JSON) holding one metric.",
)

_METRICS_HELP = "A metric file (repeatable); a G-Eval panel file brings all its members."

METRICS = _declare(
    "--metric", "metric_files", multiple=True, type=click.Path(path_type=Path), help=_METRICS_HELP
)

#: METRICS where a command has nothing to do without one.
METRICS_REQUIRED = _declare(
    "--metric",
    "metric_files",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path),
    help=_METRICS_HELP,
)

FIELDS = _declare(
    "--field",
    "fields",
    multiple=True,
    metavar="PARAM=COLUMN",
    help="Read a test-case field from another column, e.g. actual_output=summary (repeatable).",
)

LABEL = _declare(
    "--label",
    default=None,
    metavar="labels.NAME",
    help="The label every --metric is compared with (a key of each case's `labels`).",
)

LIMIT = _declare(
    "--limit",
    type=click.IntRange(2),
    default=None,
    help="The first N cases (default: all, or the suite's limit).",
)

DOCS = _declare(
    "--docs",
    type=click.IntRange(1),
    default=None,
    help="The cases of the first N documents (default: all, or the suite's docs).",
)

PAIR = _declare(
    "--pair",
    "pairs",
    multiple=True,
    metavar="BASE_METRIC=NEW_METRIC",
    help="Metric BASE_METRIC of the first file is NEW_METRIC in the other files: compare it "
    "under its new name (its definition may differ; repeatable).",
)

SIDE_BY_SIDE = _declare(
    "--pair",
    "pairs",
    multiple=True,
    metavar="METRIC=METRIC",
    help="Two metrics of this run that answer the same question (a code DAG and a judge's, "
    "say): after the summary, their scores case by case and a line for each case where they "
    "disagree (repeatable).",
)

# -- how a run goes -----------------------------------------------------------------------

NO_CACHE = _declare(
    "--no-cache",
    is_flag=True,
    help="Neither read nor write the result cache: judge every pair again.",
)

NO_REASON = _declare(
    "--no-reason",
    is_flag=True,
    help="Generate no reasons (faster; default: as each metric's include_reason says).",
)

PROGRESS = _declare(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr: a bar on a terminal, else a line every 10 s (default: on when "
    "stderr is a terminal).",
)

BENCH_PROGRESS = _declare(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr: a line every 10 s (default: on).",
)

# -- model files --------------------------------------------------------------------------

SEED = _declare(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="The seed of every random draw: the same seed gives the same result.",
)

# -- teaching the judge (`anvil train`) -----------------------------------------------------

BASE_MODEL = _declare(
    "--model",
    "model_name",
    default="smollm2-135m-instruct",
    show_default=True,
    metavar="NAME",
    help="The base judge (a catalogue name) the training is for: its chat template and "
    "tokenizer render the rows, its GGUF weights are trained.",
)

TRAIN_THREADS = _declare(
    "--threads",
    type=click.IntRange(1),
    default=None,
    help="torch threads (default: all cores).",
)

TRAIN_METRIC = _declare(
    "--metric",
    "metric_file",
    default="examples/small_judge/faithfulness.toml",
    show_default=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="The metric whose question each pair is rendered as (one yes/no question a case).",
)

TRAIN_LABEL = _declare(
    "--label",
    default="labels.consistent",
    show_default=True,
    metavar="labels.NAME",
    help="The label of --cases that says supported (1) or not (0).",
)

FORCE = _declare("--force", is_flag=True, help="Do it again even if the file is present.")
