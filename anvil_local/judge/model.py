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

    @classmethod
    def resolve(
        cls, model: str | os.PathLike | None = None, settings: JudgeSettings | None = None
    ) -> ResolvedModel:
        """A catalogue name (pulled on first use), a .gguf path, or None for the default."""
        from anvil_local.catalogue import sha256_file
        from anvil_local.pull import resolve

        name, path, sha = resolve(model)
        return cls(name, str(path), sha or sha256_file(Path(path)), settings or JudgeSettings())

    def with_settings(self, settings: JudgeSettings) -> ResolvedModel:
        return replace(self, settings=settings)
