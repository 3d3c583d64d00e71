"""How a model is loaded: the knobs a user may turn, with deterministic defaults."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass


def default_threads() -> int:
    """All cores this process may use (sched affinity where the OS has it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class JudgeSettings:
    """Load-time settings. Decoding is always greedy and the seed fixed, so results are
    reproducible; logits were bit-identical for 1 and 2 threads on the CPU build.

    `threads` None means "not chosen": resolving the model (`anvil_local.models.
    resolve_model`) fills in the host's tuned count split over the run's workers, once; a
    judge loaded from settings nobody resolved uses all cores.

    n_gpu_layers offloads layers to a GPU; it needs llama-cpp-python built with CUDA:
    `CMAKE_ARGS="-DGGML_CUDA=on" pip install --force-reinstall --no-cache-dir llama-cpp-python`.

    `thinking` lets a reasoning model think before the text it generates (task nodes,
    reasons, G-Eval steps); verdicts and scores are always read with thinking off. None
    means "the model's own setting": resolving a catalogue model takes its entry's
    `thinking` (off unless the entry says `thinking = true`).
    """

    n_ctx: int = 4096
    threads: int | None = None
    n_batch: int = 512
    n_gpu_layers: int = 0
    seed: int = 0
    thinking: bool | None = None

    def thread_count(self) -> int:
        """The threads llama.cpp runs with: the chosen count, else all cores (no lookup)."""
        return self.threads if self.threads else default_threads()

    def to_dict(self) -> dict:
        return asdict(self)
