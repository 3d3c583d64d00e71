"""ResolvedModel: the one identity of a judge model (name, file, sha256, load settings).

Made once, where a run starts (`anvil_local.models.resolve_model`: a catalogue name may be
pulled then, and the thread count is chosen then); everything below (the judge, the runner,
workers, results lines, cache keys) reads this object and never resolves again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

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
    format: str = ""  # the file's quantization as its catalogue entry names it ("Q8_0")
    # a LoRA adapter (GGUF) llama.cpp applies over `path`; `sha256` is then the pair's
    # identity (`adapter_identity`), so nothing fitted or cached for the base applies to it
    adapter: str = ""
    adapter_sha256: str = ""
    base_sha256: str = ""  # with an adapter: the sha256 of the file at `path`
    # a judge on decision servers (`judge.remote`): their specs, all serving this identity;
    # `path` is then the first one's URL
    remote: tuple[Any, ...] = ()

    def faithful_source(self) -> tuple[str, str] | None:
        """(name, sha256) of the model this file was converted from without losing
        precision, whose fitted calibration maps also hold for it; else None."""
        return (self.source, self.source_sha256) if self.faithful and self.source else None

    def with_settings(self, settings: JudgeSettings) -> ResolvedModel:
        return replace(self, settings=settings)


def adapter_identity(base_sha256: str, adapter_sha256: str) -> str:
    """One sha256 for a base file with an adapter: results, steps and fitted maps keyed by a
    model's sha256 then never mix the base's with the adapted judge's."""
    return hashlib.sha256(f"{base_sha256}+lora:{adapter_sha256}".encode()).hexdigest()
