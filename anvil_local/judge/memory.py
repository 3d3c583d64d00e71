"""What one judge process needs in memory, estimated before anything is loaded, and what this
machine has: so `--jobs N` starts only the workers that fit.

Measured on SmolLM2-135M Q4_1 (98 MB file), 4096-token context: a worker's resident size was
about 297 MB after a 1,000-token prompt, Python included; the estimate below gives 328 MB
(it errs high: a worker that does not fit costs more than one not started).
"""

from __future__ import annotations

import os
from pathlib import Path

from anvil_local.judge.model import ResolvedModel

#: The interpreter, llama-cpp-python and the rest of a worker process, beside the model.
PROCESS_BYTES = 48 << 20


def _metadata(path: Path) -> tuple[dict[str, str], int]:
    """The GGUF's metadata and vocabulary size, from a vocabulary-only load (no weights)."""
    import llama_cpp

    llama = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    try:
        return dict(llama.metadata), int(llama.n_vocab())
    finally:
        llama.close()


def worker_bytes(model: ResolvedModel) -> int:
    """One judge process: the model file (and adapter), resident once it has been read (each
    worker counts it whole: llama.cpp maps it, but repacked weights are each process's own);
    the KV cache of its context (K and V, f16, every layer); the logits of a decode batch; the
    process itself. A decision server's judge needs only the process; with layers on a GPU,
    the weights and the cache are not counted against this machine's memory."""
    if model.remote:
        return PROCESS_BYTES
    path = Path(model.path)
    metadata, n_vocab = _metadata(path)
    arch = metadata.get("general.architecture", "")

    def number(key: str, default: int = 0) -> int:
        try:
            return int(metadata.get(f"{arch}.{key}", default))
        except ValueError:
            return default

    layers = number("block_count")
    width = number("embedding_length")
    heads = max(1, number("attention.head_count", 1))
    kv_heads = number("attention.head_count_kv", heads)
    head_dim = number("attention.key_length", width // heads)
    kv = 2 * layers * model.settings.n_ctx * kv_heads * head_dim * 2
    logits = model.settings.n_batch * n_vocab * 4
    adapter = os.path.getsize(model.adapter) if model.adapter else 0
    if model.settings.n_gpu_layers:  # weights and cache on the GPU: host memory for the rest
        return logits + PROCESS_BYTES
    return os.path.getsize(path) + adapter + kv + logits + PROCESS_BYTES


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where there is none: no clamp)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
