"""`anvil models`: the judge model catalogue (list, pull, add, convert, tune, path, verify)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from anvil_local.cli import options
from anvil_local.cli.root import EXIT_FAILED


@click.group()
def models() -> None:
    """The judge model catalogue: list, pull, add, convert, tune, path, verify."""


def _table(rows: list[tuple[str, ...]]) -> str:
    """Left-aligned columns, two spaces apart, no trailing blanks."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


@models.command("list")
def models_list() -> None:
    """Known models, and whether each is on this machine; judges on decision servers last."""
    from anvil_local.models.catalogue import entries, remote_entries
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
    for r in remote_entries():  # judges on decision servers: nothing to pull
        rows.append(
            (r.name, "remote", "-", "-", "-", "-", f"{r.model or '-'} at {', '.join(r.urls)}")
        )
    click.echo(_table(rows))


@models.command("pull")
@click.argument("name")
@options.FORCE
def models_pull(name: str, force: bool) -> None:
    """Fetch a catalogue model and verify its sha256."""
    from anvil_local.models.catalogue import get_entry
    from anvil_local.models.store import pull

    entry = get_entry(name)
    if not sys.stderr.isatty() or entry.size <= 0:
        path = pull(entry, force=force)
    else:
        bar = click.progressbar(
            length=entry.size, label=entry.name, file=sys.stderr, show_pos=True, width=24
        )
        with bar:
            path = pull(entry, progress=bar.update, force=force)
    click.echo(f"{entry.name}: {path}")


@models.command("add")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--name", default=None, help="Catalogue name (default: from the file name).")
@click.option(
    "--thinking/--no-thinking",
    default=False,
    show_default=True,
    help="Let a reasoning model think before the text it generates (task nodes, reasons); "
    "verdicts are always read with thinking off.",
)
def models_add(path: Path, name: str | None, thinking: bool) -> None:
    """Register a local GGUF file under a name (the file stays where it is), and show how
    the judge prompts it: architecture, chat template, thinking, end-of-turn tokens and how
    answers are spelled. A model that cannot judge (an encoder) is refused. Without --name,
    a copy of a catalogue model's own file (same size and sha256, carried in by hand) is
    stored as that model instead, so the default judge needs no fetch."""
    from anvil_local.errors import ModelError
    from anvil_local.judge.native import NativeProbeFailed, describe_file
    from anvil_local.models.catalogue import add_local, check_gguf
    from anvil_local.models.store import adopt

    try:
        report = describe_file(check_gguf(path))
    except NativeProbeFailed as exc:
        report, unreadable = None, str(exc)
    if report is not None and report.unfit:
        raise ModelError(f"{path.name} is {report.unfit}; a judge must be a chat (decoder) model")
    known = adopt(check_gguf(path)) if name is None else None
    if known is not None:
        entry = known
        click.echo(f"stored {path} as {entry.name}: {entry.store_path()} (sha256 {entry.sha256})")
    else:
        entry = add_local(path, name, thinking=thinking)
        click.echo(f"added {entry.name}: {entry.local_path} (sha256 {entry.sha256})")
    if report is None:
        click.echo(f"  warning: {unreadable}")
        return
    rows = report.lines(entry.thinking)
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        click.echo(f"  {label.ljust(width)}  {value}")


@models.command("convert")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    required=True,
    type=click.Choice(["Q8_0", "Q4_0", "F16"], case_sensitive=False),
    help="Weight format: Q8_0 and Q4_0 have fast llama.cpp CPU kernels on x86-64.",
)
@options.FORCE
def models_convert(name: str, fmt: str, force: bool) -> None:
    """Convert a catalogue model to another weight format (llama.cpp's quantizer); the file
    is stored beside the pulled ones and registered as NAME-FORMAT. An adapter is merged
    into its base in that format (needs gguf: the merge extra), so it runs with no adapter
    cost."""
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
    help="A format to convert to and measure beside the shipped file (repeatable; default: "
    "Q8_0). Only formats with more bits per weight than the shipped file, so the judge stays "
    "the same judge.",
)
@options.TUNE_THREADS
@click.option(
    "--rounds",
    type=click.IntRange(1),
    default=3,
    show_default=True,
    help="Interleaved rounds of every candidate; the candidates the choice is still "
    "uncertain between are then measured again, until it is certain.",
)
@click.option(
    "--budget",
    "budget_s",
    type=click.FloatRange(0),
    default=None,
    help="Seconds of measuring after which no further round starts (default: 180); a "
    "choice still uncertain then is not recorded.",
)
def models_tune(
    formats: tuple[str, ...], thread_counts: tuple[int, ...], rounds: int, budget_s: float | None
) -> None:
    """Choose the file and thread count of the default judge for this host: convert it to
    the formats llama.cpp reads fastest, measure each at a few thread counts in interleaved
    rounds (more rounds of close candidates until the choice is certain), and record the
    choice (runs without --model use it; the first such run tunes by itself). Nothing is
    recorded when other processes used the CPU meanwhile, or when the candidates stay too
    close to tell apart (exit 1)."""
    from anvil_local.models.tuning import BUDGET_SECONDS, DEFAULT_FORMATS, profile_path, tune

    found = tune(
        formats=formats or DEFAULT_FORMATS,
        threads=thread_counts or None,
        rounds=rounds,
        progress=lambda text: click.echo(text, err=True),
        budget_s=BUDGET_SECONDS if budget_s is None else budget_s,
    )
    profile = found.profile
    click.echo(_tuning_table(profile, found.recorded))
    if not found.recorded:
        click.echo(
            f"not recorded: {found.reason}; runs use the shipped file on all cores "
            "(run this again on a quiet machine)"
        )
        sys.exit(EXIT_FAILED)
    click.echo(f"chosen because {found.basis}")
    click.echo(f"default judge here: {profile.use}, {profile.threads} threads ({profile_path()})")


def _tuning_table(profile: Any, recorded: bool = True) -> str:
    rows = [
        ("MODEL", "FORMAT", "THREADS", "PROMPT TOK/S", "GENERATED TOK/S", "PROBE S",
         "MEDIAN IN", "ROUNDS", "SPREAD", "OTHERS' CPU", ""),
    ]  # fmt: skip
    mark = "chosen" if recorded else "leading"
    for m in sorted(profile.measured, key=lambda m: m.seconds):
        chosen = mark if (m.model, m.threads) == (profile.use, profile.threads) else ""
        low, high = m.span
        rows.append(
            (
                m.model,
                m.format or "-",
                str(m.threads),
                f"{m.prompt_tokens_per_s:.0f}",
                f"{m.generated_tokens_per_s:.0f}",
                f"{m.seconds:.2f}",
                f"{low:.2f}-{high:.2f}",
                str(m.rounds),
                f"{m.spread:.0%}",
                f"{m.others_cpu:.0%}",
                chosen,
            )
        )
    return _table(rows)


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
