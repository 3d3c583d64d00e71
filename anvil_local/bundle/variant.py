"""Which CPU variant of a portable llama.cpp build (a kit's, `bundle/llama.py`) this host
loads, for `anvil doctor`. A native build has no variants, and nothing to say.

The choice is llama.cpp's own (each variant scores the host's CPU features, the best one
loads), so it is asked of llama.cpp in a child process, never guessed here: the child loads
the variants as the package does at import, and reads which one it mapped.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_PREFIX = "libggml-cpu-"

_CHILD = r"""
import ctypes, pathlib, re, sys
lib = sys.argv[1]
sonames = [
    p for p in pathlib.Path(lib).glob("libggml.so.*") if re.fullmatch(r"libggml\.so\.\d+", p.name)
]
ggml = ctypes.CDLL(str(sonames[0]) if sonames else lib + "/libggml.so")
ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
ggml.ggml_backend_load_all_from_path(lib.encode())
with open("/proc/self/maps") as maps:
    for line in maps:
        if "/libggml-cpu-" in line:
            print(line.split()[-1])
            break
"""


def variant_name(path: str) -> str:
    """`.../libggml-cpu-haswell.so` -> `haswell`."""
    return Path(path).name.removeprefix(_PREFIX).removesuffix(".so")


def built_variants(lib_dir: Path) -> list[str]:
    """The CPU variants a build holds (empty for a native build)."""
    return sorted(variant_name(p.name) for p in lib_dir.glob(f"{_PREFIX}*.so"))


def loaded_variant(lib_dir: Path, timeout: float = 60.0) -> str | None:
    """The variant llama.cpp loads on this host; None when it loads none (or the child
    failed, which the doctor's own test decode reports)."""
    try:
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(lib_dir)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = child.stdout.strip().splitlines()
    return variant_name(lines[0]) if child.returncode == 0 and lines else None
