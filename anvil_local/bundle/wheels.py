"""The kit's wheelhouse, written with pip: anvil-local's own wheel, then every core
dependency for the target Python and platform (`pip download`, wheels only), so that
`pip install --no-index --find-links wheels/ anvil-local` needs nothing else.

Only the core dependencies travel: pip resolves anvil-local's wheel without extras, so the
optional groups (bench, ray, train, ...) never enter a kit.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from anvil_local.errors import KitError

log = logging.getLogger(__name__)

#: The distribution this package is.
PROJECT = "anvil-local"


@dataclass(frozen=True)
class Target:
    """The Python the kit installs into, as pip names it; empty: this interpreter's."""

    python_version: str = ""
    platforms: tuple[str, ...] = ()

    def pip_args(self) -> list[str]:
        args: list[str] = []
        if self.python_version:
            args += ["--python-version", self.python_version, "--implementation", "cp"]
        for platform in self.platforms:
            args += ["--platform", platform]
        return args

    def python(self) -> str:
        """The target's major.minor version."""
        return self.python_version or f"{sys.version_info.major}.{sys.version_info.minor}"

    def with_platforms_of(self, wheel: Path) -> Target:
        """This target, also accepting `wheel`'s own platform tags (a wheel built here is
        tagged linux_x86_64, which a manylinux platform alone would refuse)."""
        if not self.platforms:
            return self
        tags = wheel_platforms(wheel.name)
        extra = tuple(t for t in tags if t != "any" and t not in self.platforms)
        return Target(self.python_version, self.platforms + extra)


def wheel_platforms(filename: str) -> tuple[str, ...]:
    """The platform tags of a wheel file name (`name-ver(-build)?-py-abi-plat.whl`)."""
    stem = filename.removesuffix(".whl")
    parts = stem.split("-")
    if len(parts) < 5:
        raise KitError(f"{filename} is not a wheel file name")
    return tuple(parts[-1].split("."))


def wheel_version(filename: str) -> str:
    """The version field of a wheel file name."""
    parts = filename.removesuffix(".whl").split("-")
    if len(parts) < 5:
        raise KitError(f"{filename} is not a wheel file name")
    return parts[1]


def pip(args: Sequence[str], doing: str, env: dict[str, str] | None = None) -> None:
    """Run pip with this interpreter; KitError naming the step and pip's last line on
    failure. pip's own output goes to stderr, so a long download shows its progress."""
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    if not sys.stderr.isatty():  # a log, not a terminal: pip's errors only
        cmd.append("--quiet")
    log.info("%s: %s", doing, " ".join(cmd[3:]))
    result = subprocess.run(
        cmd, stdout=sys.stderr, stderr=subprocess.PIPE, text=True, env=env, check=False
    )
    if result.returncode != 0:
        lines = [line for line in (result.stderr or "").splitlines() if line.strip()]
        reason = lines[-1].removeprefix("ERROR: ") if lines else f"exit {result.returncode}"
        raise KitError(f"{doing} failed: {reason}")


def project_root() -> Path | None:
    """The checkout this package runs from (its pyproject names anvil-local), if any."""
    root = Path(__file__).resolve().parent.parent.parent
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and re.search(
        rf'^name\s*=\s*"{PROJECT}"', pyproject.read_text(encoding="utf-8"), re.M
    ):
        return root
    return None


def project_wheel(dest: Path, source: Path | None = None) -> Path:
    """anvil-local's wheel in `dest`: built from the checkout (`source`, else the one this
    package runs from), or, when installed from a wheel, fetched from the index at the
    installed version."""
    source = source or project_root()
    with tempfile.TemporaryDirectory(prefix="anvil-kit-") as tmp:
        out = Path(tmp)
        if source is not None:
            pip(
                ["wheel", "--no-deps", "-w", str(out), str(source)],
                "building anvil-local",
            )
        else:
            try:
                installed = version(PROJECT)
            except PackageNotFoundError as exc:
                raise KitError("anvil-local is neither a checkout nor installed") from exc
            pip(
                ["download", "--no-deps", "--only-binary=:all:", "-d", str(out),
                 f"{PROJECT}=={installed}"],
                f"fetching {PROJECT} {installed}",
            )  # fmt: skip
        (wheel,) = out.glob("anvil_local-*.whl")
        dest.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(wheel, dest / wheel.name))


def dependencies(dest: Path, wheels: Sequence[Path], target: Target) -> None:
    """Every wheel `wheels` need for `target`, fetched into `dest` (wheels only: a source
    distribution would need a compiler on the other side)."""
    pip(
        ["download", "--only-binary=:all:", "-d", str(dest), *target.pip_args(),
         *(str(w) for w in wheels)],
        f"fetching the dependencies for Python {target.python()}",
    )  # fmt: skip
