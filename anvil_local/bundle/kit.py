"""`write_kit`: one folder that carries anvil-local into a network with no package index.

    KIT/
      install.sh        the one command on the other side (`install.py`)
      verify_kit.py     the manifest check, standard library only (`manifest.py`)
      manifest.json     versions, models and licences, size and sha256 of every file
      wheels/           anvil-local, llama-cpp-python (portable), every core dependency
      models/           the catalogue models' files (an adapter shipped in the wheel: none)
      examples/         the checkout's examples, so the README's main job runs from the kit

`verify_kit` checks a kit against its manifest and raises KitError naming the first bad file.
"""

from __future__ import annotations

import datetime
import logging
import platform
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil_local.bundle import carry, llama, manifest, wheels
from anvil_local.bundle.install import install_script
from anvil_local.errors import KitError
from anvil_local.models.catalogue import ModelEntry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KitRequest:
    """What a kit holds: the target Python, the models, and where llama-cpp-python's
    wheel comes from (a wheel built before, else a portable build here)."""

    target: wheels.Target = field(default_factory=wheels.Target)
    models: tuple[str, ...] = ()  # empty: `carry.default_names()`
    llama_wheel: Path | None = None
    source: Path | None = None  # the checkout to build anvil-local from (default: this one)


@dataclass(frozen=True)
class Kit:
    """A written kit: its folder (or tar file) and manifest."""

    path: Path
    manifest: dict[str, Any]

    def listing(self) -> list[tuple[str, int]]:
        """(file, bytes) of every file the manifest lists."""
        return [
            (name, int(about["size"])) for name, about in sorted(self.manifest["files"].items())
        ]


def _empty_target(kit: Path) -> None:
    if kit.exists() and (not kit.is_dir() or any(kit.iterdir())):
        raise KitError(f"{kit} exists and is not an empty folder: give a new one")
    kit.mkdir(parents=True, exist_ok=True)


def write_kit(kit: Path, request: KitRequest, tar: bool = False) -> Kit:
    """Write the kit into `kit` (a new or empty folder); with `tar`, then pack it into
    `kit`.tar and remove the folder. A step that fails leaves no half-written kit."""
    chosen = carry.choose(list(request.models) or carry.default_names())  # before anything slow
    if request.llama_wheel is None:
        llama.check_buildable(request.target)
    _empty_target(kit)
    try:
        written = manifest.write_manifest(kit, _fill(kit, request, chosen))
    except BaseException:
        shutil.rmtree(kit, ignore_errors=True)
        raise
    if not tar:
        return Kit(kit, written)
    archive = kit.with_name(kit.name + ".tar")
    with tarfile.open(archive, "w") as out:
        out.add(kit, arcname=kit.name)
    shutil.rmtree(kit)
    return Kit(archive, written)


def _fill(kit: Path, request: KitRequest, chosen: list[ModelEntry]) -> dict[str, Any]:
    """Write every file of the kit but the manifest; returns what the manifest says of it."""
    wheel_dir = kit / "wheels"
    own = wheels.project_wheel(wheel_dir, request.source)
    if request.llama_wheel is not None:
        llama_wheel, build = llama.given_wheel(request.llama_wheel, wheel_dir)
    else:
        llama_wheel, build = llama.build_portable(wheel_dir), "portable, built for this kit"
    target = request.target.with_platforms_of(llama_wheel)
    wheels.dependencies(wheel_dir, [own, llama_wheel], target)
    carried = carry.carry(chosen, kit)
    checkout = request.source or wheels.project_root()
    if checkout is not None and (checkout / "examples").is_dir():
        shutil.copytree(checkout / "examples", kit / "examples")
    shutil.copyfile(manifest.__file__, kit / "verify_kit.py")
    anvil_version = wheels.wheel_version(own.name)
    script = kit / "install.sh"
    models = [c.kit_path for c in carried if c.kit_path]
    script.write_text(install_script(anvil_version, target.python(), models), encoding="utf-8")
    script.chmod(0o755)
    return {
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "anvil_local": anvil_version,
        "llama_cpp_python": wheels.wheel_version(llama_wheel.name),
        "llama_build": build,
        "llama_cmake_args": None if request.llama_wheel else llama.cmake_args(),
        "python": target.python(),
        "platforms": list(target.platforms) or [f"this machine's ({platform.machine()})"],
        "models": [c.to_dict() for c in carried],
    }


def verify_kit(kit: Path) -> dict[str, Any]:
    """The kit's manifest when every file matches it; KitError naming the first bad file."""
    try:
        found = manifest.problems(kit)
        read = manifest.read_manifest(kit)
    except ValueError as exc:
        raise KitError(str(exc)) from exc
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise KitError(f"{found[0]}{more}")
    return read
