"""`anvil bundle DIR` (write an offline kit) and `anvil bundle verify DIR` (check one)."""

from __future__ import annotations

from pathlib import Path

import click

from anvil_local.cli import options


class _WriteByDefault(click.Group):
    """`anvil bundle DIR ...` means `anvil bundle write DIR ...`; `verify` is the other
    command (a kit folder named "verify" is written with `anvil bundle write verify`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["write", *args]
        return super().parse_args(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, cmd_name) or super().get_command(ctx, "write")


@click.group(cls=_WriteByDefault)
def bundle() -> None:
    """Carry anvil-local into a network with no package index: `anvil bundle DIR` writes a
    kit (wheels, a portable llama.cpp build, the models, install.sh, a manifest);
    `anvil bundle verify DIR` checks one. See docs/airgapped.md."""


def _size(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 100_000 else f"{count / 1e3:.1f} kB"


@bundle.command("write")
@click.argument("kit_dir", metavar="DIR", type=click.Path(path_type=Path))
@options.KIT_MODELS
@click.option(
    "--python-version",
    default=None,
    metavar="X.Y",
    help="The target's Python, as pip names it (default: this interpreter's).",
)
@click.option(
    "--platform",
    "platforms",
    multiple=True,
    metavar="TAG",
    help="The target's platform tag, as pip names it, e.g. manylinux_2_28_x86_64 "
    "(repeatable; default: this machine's).",
)
@click.option(
    "--llama-wheel",
    default=None,
    type=click.Path(path_type=Path),
    help="A llama-cpp-python wheel built before, to carry instead of building the portable "
    "one here (which compiles every CPU variant: long on a small machine).",
)
@click.option("--tar", is_flag=True, help="Pack the kit into DIR.tar and remove the folder.")
def write(
    kit_dir: Path,
    models: tuple[str, ...],
    python_version: str | None,
    platforms: tuple[str, ...],
    llama_wheel: Path | None,
    tar: bool,
) -> None:
    """Write an offline kit into DIR (new or empty): a wheelhouse of anvil-local and its
    core dependencies (no extras) for the target Python, llama-cpp-python built portable
    (every CPU variant but AMX, chosen on the host at load), the catalogue models with their
    sha256, install.sh and a manifest. Needs the package index (or the site's mirror)."""
    from anvil_local.bundle import KitRequest, Target, write_kit

    request = KitRequest(
        target=Target(python_version or "", platforms), models=models, llama_wheel=llama_wheel
    )
    kit = write_kit(kit_dir, request, tar=tar)
    rows = kit.listing()
    width = max(len(name) for name, _ in rows)
    for name, size in rows:
        click.echo(f"{name.ljust(width)}  {_size(size):>9}")
    total = sum(size for _, size in rows)
    click.echo(f"{kit.path}: {len(rows)} files, {_size(total)}; install: sh install.sh VENV")


@bundle.command("verify")
@click.argument("kit_dir", metavar="DIR", type=click.Path(path_type=Path))
def verify(kit_dir: Path) -> None:
    """Check a kit's files against its manifest (size and sha256 of each, and no stray
    file). Exit 0: intact; 2: one line naming the bad file."""
    from anvil_local.bundle import verify_kit

    manifest = verify_kit(kit_dir)
    models = ", ".join(m["name"] for m in manifest.get("models", [])) or "none"
    click.echo(
        f"{kit_dir}: {len(manifest['files'])} files match the manifest (anvil-local "
        f"{manifest.get('anvil_local')}, llama-cpp-python {manifest.get('llama_cpp_python')}, "
        f"Python {manifest.get('python')}; models: {models})"
    )
