"""Which catalogue models a kit carries, and their files.

A kit carries shipped catalogue models only: the target's catalogue is the one inside the
anvil-local wheel, so a user's own entry would arrive with no entry to name it. An adapter
(`base = ...`) brings its base; an adapter file shipped with the catalogue travels inside
the wheel and needs no copy. Every other file is pulled here first (sha256-checked as
always) and copied into the kit's `models/`.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from anvil_local.errors import KitError
from anvil_local.models.catalogue import ModelEntry, default_entry, entries, get_entry, shipped_dir
from anvil_local.models.store import ensure_model

#: The trained adapter a kit carries by default, when the catalogue has it.
TRAINED_ADAPTER = "smollm2-135m-faithful"


@dataclass(frozen=True)
class Carried:
    """One catalogue model in a kit: its file in the kit's models/, or shipped in the wheel."""

    entry: ModelEntry
    kit_path: str | None  # relative to the kit; None: inside the anvil-local wheel

    def to_dict(self) -> dict[str, object]:
        e = self.entry
        return {
            "name": e.name,
            "file": e.file,
            "size": e.size,
            "sha256": e.sha256,
            "licence": e.licence,
            "base": e.base or None,
            "in_kit": self.kit_path or f"inside the anvil-local wheel ({e.file})",
        }


def default_names() -> list[str]:
    """The default judge, and the trained adapter when the catalogue has it."""
    names = [default_entry().name]
    if any(e.name == TRAINED_ADAPTER for e in entries()):
        names.append(TRAINED_ADAPTER)
    return names


def choose(names: Sequence[str]) -> list[ModelEntry]:
    """The entries to carry, bases before their adapters, each once; KitError for a name
    the target could not look up (a user's own entry)."""
    chosen: dict[str, ModelEntry] = {}
    shipped = shipped_dir().resolve()
    for name in names:
        entry = get_entry(name)
        if Path(entry.origin).resolve().parent != shipped:
            raise KitError(
                f"model {name!r} is this machine's own catalogue entry, which a kit cannot "
                "name on the other side; carry its file and `anvil models add` it there"
            )
        if entry.base:
            base = get_entry(entry.base)
            chosen.setdefault(base.name, base)
        chosen.setdefault(entry.name, entry)
    return list(chosen.values())


def ships_in_wheel(entry: ModelEntry) -> bool:
    return len(entry.parts) == 1 and entry.parts[0].shipped is not None


def carry(chosen: Sequence[ModelEntry], kit: Path) -> list[Carried]:
    """Copy each model's file into `kit/models/` (pulling it here first when needed)."""
    carried = []
    for entry in chosen:
        if ships_in_wheel(entry):
            carried.append(Carried(entry, None))
            continue
        source = ensure_model(entry)
        target = kit / "models" / entry.file
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        carried.append(Carried(entry, target.relative_to(kit).as_posix()))
    return carried
