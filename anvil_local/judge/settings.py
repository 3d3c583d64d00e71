"""How a model is loaded: the knobs a user may turn, with deterministic defaults."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass


def host_threads() -> int:
    """The thread count a run uses when none is given: what `anvil models tune` measured
    fastest on this host, else all cores."""
    from anvil_local.tuning import tuned_threads

    return tuned_threads() or default_threads()


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

    n_gpu_layers offloads layers to a GPU; it needs llama-cpp-python built with CUDA:
    `CMAKE_ARGS="-DGGML_CUDA=on" pip install --force-reinstall --no-cache-dir llama-cpp-python`.
    """

    n_ctx: int = 4096
    threads: int | None = None  # None: the host's tuned count, else all cores
    n_batch: int = 512
    n_gpu_layers: int = 0
    seed: int = 0

    def resolved_threads(self) -> int:
        return self.threads if self.threads else host_threads()

    def to_dict(self) -> dict:
        return asdict(self)
