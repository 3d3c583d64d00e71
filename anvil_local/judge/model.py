"""ResolvedModel: the one identity of a judge model (name, file, sha256, load settings).

Resolved once, where a run starts (a catalogue name may be pulled then); everything below
(the judge, the runner, workers, results lines, cache keys) reads this object and never
resolves again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from anvil_local.judge.settings import JudgeSettings


@dataclass(frozen=True)
class ResolvedModel:
    name: str
    path: str
    sha256: str
    settings: JudgeSettings = field(default_factory=JudgeSettings)
    # a file `anvil models convert` wrote: the catalogue model it came from, and whether it
    # keeps that model's precision (then maps fitted on the source apply to it)
    source: str = ""
    source_sha256: str = ""
    faithful: bool = False

    @classmethod
    def resolve(
        cls, model: str | os.PathLike | None = None, settings: JudgeSettings | None = None
    ) -> ResolvedModel:
        """A catalogue name (pulled on first use), a .gguf path, or None for the default."""
        from anvil_local.catalogue import sha256_file
        from anvil_local.pull import resolve

        name, path, sha, entry = resolve(model)
        source, source_sha, faithful = "", "", False
        if entry is not None and entry.source:
            from anvil_local.catalogue import get_entry
            from anvil_local.errors import ModelError
            from anvil_local.judge.convert import keeps_precision

            source, source_sha = entry.source, entry.source_sha256
            try:
                faithful = keeps_precision(get_entry(entry.source).format, entry.format)
            except ModelError:
                faithful = False
        return cls(
            name,
            str(path),
            sha or sha256_file(Path(path)),
            settings or JudgeSettings(),
            source,
            source_sha,
            faithful,
        )

    def faithful_source(self) -> tuple[str, str] | None:
        """(name, sha256) of the model this file was converted from without losing
        precision, whose fitted calibration maps also hold for it; else None."""
        return (self.source, self.source_sha256) if self.faithful and self.source else None

    def with_settings(self, settings: JudgeSettings) -> ResolvedModel:
        return replace(self, settings=settings)
