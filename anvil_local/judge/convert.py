"""Converting a GGUF model to another weight format with llama.cpp's own quantizer.

A judge spends nearly all its time reading prompts, and llama.cpp's CPU kernels are not
equally fast for every format: on x86-64 hosts Q4_0 and Q8_0 read prompts about twice as
fast as Q4_1 (`benchmarks/throughput.py`). Re-quantizing a Q4_1 file to Q8_0 keeps all the
precision the Q4_1 file has; to Q4_0 it loses a little (fidelity: `benchmarks/formats.md`).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from anvil_local.errors import ModelError

log = logging.getLogger(__name__)

#: The formats `anvil models convert` offers, by name.
FORMATS = ("Q8_0", "Q4_0", "F16")

#: Bits per weight of the formats a catalogue entry may state (block scales left out).
_BITS = {"F32": 32, "BF16": 16, "F16": 16, "Q8_0": 8, "Q6_K": 6, "Q5_K_M": 5, "Q5_0": 5}
_BITS |= {"Q5_1": 5, "Q4_K_M": 4, "Q4_0": 4, "Q4_1": 4}


def keeps_precision(source_format: str, target_format: str) -> bool:
    """Whether converting `source_format` to `target_format` gives every weight more bits
    than it had, so the judge stays the same judge up to kernel rounding (Q4_1 -> Q8_0
    moved option probabilities by at most 0.05 on the shipped cases, as Q4_1 -> F16 did);
    an unknown format never does."""
    source = _BITS.get(source_format.upper())
    target = _BITS.get(target_format.upper())
    return source is not None and target is not None and target > source


def llama_cpp_version() -> str:
    import llama_cpp

    return str(getattr(llama_cpp, "__version__", "unknown"))


@contextmanager
def _quiet_native_output() -> Iterator[None]:
    """llama.cpp logs every tensor it converts on the C stdout/stderr: send both to /dev/null
    for the duration (file-descriptor level, which Python's redirects do not reach)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def quantize(source: Path, target: Path, fmt: str, threads: int = 0) -> None:
    """Write `source` in format `fmt` to `target` (requantizing an already quantized file;
    the GGUF metadata, chat template included, is copied as it is)."""
    import llama_cpp

    if fmt not in FORMATS:
        raise ModelError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{fmt}")
    params.allow_requantize = True
    params.nthread = threads
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    log.info("converting %s to %s", source.name, fmt)
    with _quiet_native_output():
        status = llama_cpp.llama_model_quantize(
            str(source).encode(), str(partial).encode(), ctypes.byref(params)
        )
    if status != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise ModelError(f"llama.cpp could not convert {source.name} to {fmt} (status {status})")
    partial.replace(target)
