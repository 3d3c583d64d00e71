"""Can the installed llama.cpp run on this CPU? Asked in a child process, so that a crash
(SIGILL on AMX that a VM advertises but cannot run, a library built on another CPU) becomes
one clear error instead of killing the caller with a bare signal.

The verdict of a passing check is cached per library build (the bytes of its shared
libraries), CPU and model file, so it costs one short child process the first time only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import platform
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from anvil_local.errors import NativeCrash, NativeProbeFailed
from anvil_local.paths import cache_dir

if TYPE_CHECKING:
    from anvil_local.judge.report import ModelReport

log = logging.getLogger(__name__)

#: Set to 0 to skip the check (for example inside a sandbox that forbids child processes).
CHECK_ENV = "ANVIL_NATIVE_CHECK"
#: The CMake file that builds llama.cpp natively but without AMX (see its comments).
BUILD_FILE = Path(__file__).with_name("llama_build.cmake")
CHILD_TIMEOUT = 600.0
_LIB_SUFFIXES = (".so", ".dylib", ".dll")
_AMX_MNEMONICS = (
    "ldtilecfg",
    "sttilecfg",
    "tilerelease",
    "tilezero",
    "tileloadd",
    "tileloaddt1",
    "tilestored",
    "tdpbssd",
    "tdpbsud",
    "tdpbusd",
    "tdpbuud",
    "tdpbf16ps",
    "tdpfp16ps",
)


def llama_cpp_dir() -> Path | None:
    """The installed llama_cpp package, found without importing (and so loading) it."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def llama_cpp_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama-cpp-python")
    except PackageNotFoundError:
        return None


def _library_files() -> list[Path]:
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    package = llama_cpp_dir()
    folder = Path(override) if override else (package / "lib" if package else None)
    if folder is None or not folder.is_dir():
        return []
    return sorted(
        (p for p in folder.iterdir() if p.is_file() and any(s in p.name for s in _LIB_SUFFIXES)),
        key=lambda p: (len(p.name), p.name),
    )


def library_digests() -> dict[Path, str]:
    """The shared libraries llama-cpp-python loads (LLAMA_CPP_LIB_PATH overrides, as there),
    one per distinct content (wheels hold libx.so, libx.so.0 and so on as copies), with
    their sha256."""
    seen: dict[str, Path] = {}
    for path in _library_files():
        seen.setdefault(_file_digest(path), path)
    return {path: digest for digest, path in sorted(seen.items(), key=lambda kv: kv[1].name)}


def native_libraries() -> list[Path]:
    return list(library_digests())


def rebuild_command() -> str:
    """The exact command that rebuilds llama-cpp-python natively without AMX."""
    pinned = llama_cpp_version()
    requirement = f"llama-cpp-python=={pinned}" if pinned else "llama-cpp-python"
    return (
        f'CMAKE_ARGS="-DCMAKE_PROJECT_INCLUDE={BUILD_FILE}" {sys.executable} -m pip install '
        f"--force-reinstall --no-cache-dir --no-deps {requirement}"
    )


def cpu_identity() -> str:
    """The CPU model and its feature flags (what decides which instructions run)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return f"{platform.machine()} {platform.processor()}"
    keep = []
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip()
        if key in ("model name", "flags", "Features", "CPU implementer", "CPU part"):
            keep.append(line.strip())
        if not line.strip() and keep:
            break  # the first processor is enough: they are alike on the hosts we run on
    return "\n".join(keep) or platform.machine()


def cpu_flags() -> set[str]:
    """Feature flags of the first CPU in /proc/cpuinfo (empty where there is none)."""
    for line in cpu_identity().splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_key(model_path: Path, n_gpu_layers: int) -> str:
    """Library bytes + CPU + model file identity: a cached verdict holds for exactly these."""
    h = hashlib.sha256()
    h.update((llama_cpp_version() or "").encode())
    for digest in library_digests().values():
        h.update(digest.encode())
    h.update(cpu_identity().encode())
    stat = model_path.stat()
    h.update(f"{model_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{n_gpu_layers}".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class ProbeResult:
    """What the child process saw: llama.cpp's system info and, if asked, its speed."""

    system_info: str
    llama_cpp_version: str
    prompt_tokens_per_s: float | None = None
    generated_tokens_per_s: float | None = None
    threads: int = 0
    n_params: int | None = None  # the model's parameter count


def describe_signal(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    text = signal.strsignal(number) or ""
    return f"{name} ({text.lower()})" if text else name


def _holds_amx() -> bool:
    counts = [amx_instruction_count(p) for p in native_libraries() if "ggml-cpu" in p.name]
    return any(counts)


def crash_message(number: int, model_path: Path) -> str:
    """One line: which signal, the likely cause, and the exact command that fixes it."""
    what = describe_signal(number)
    head = f"llama.cpp crashed with {what} in a test decode of {model_path.name}"
    if _holds_amx():
        return (
            f"{head}: the installed llama-cpp-python holds AMX instructions, which this CPU "
            f"advertises but cannot run. Rebuild it without AMX: {rebuild_command()}"
        )
    if number == signal.SIGILL:
        return (
            f"{head}: the installed llama-cpp-python holds CPU instructions this host cannot "
            f"run (was it built on another CPU?). Rebuild it for this host: {rebuild_command()}"
        )
    return (
        f"{head}; `anvil doctor` shows more, and if the native build is at fault, rebuild it: "
        f"{rebuild_command()}"
    )


def probe(
    model_path: Path,
    threads: int,
    n_gpu_layers: int = 0,
    throughput: bool = False,
    command: list[str] | None = None,
) -> ProbeResult:
    """Load `model_path` and decode a few tokens in a child process.

    Raises NativeCrash when the child dies from a signal. `command` replaces the child's
    command line (what a test uses to stand in for a crashing library).
    """
    args = {
        "model": str(model_path),
        "threads": threads,
        "n_gpu_layers": n_gpu_layers,
        "throughput": throughput,
    }
    argv = command or [sys.executable, "-m", "anvil_local.judge.canary", json.dumps(args)]
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        raise NativeCrash(
            f"a test decode of {model_path.name} did not finish in {CHILD_TIMEOUT:.0f} s; "
            "run `anvil doctor` for details"
        ) from exc
    if done.returncode < 0:
        raise NativeCrash(crash_message(-done.returncode, model_path))
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout or "").strip().splitlines()
        reason = tail[-1] if tail else f"exit status {done.returncode}"
        raise NativeProbeFailed(reason)
    report = json.loads(lines[-1])
    return ProbeResult(
        system_info=report.get("system_info", ""),
        llama_cpp_version=report.get("llama_cpp_version", ""),
        prompt_tokens_per_s=report.get("prompt_tokens_per_s"),
        generated_tokens_per_s=report.get("generated_tokens_per_s"),
        threads=report.get("threads", threads),
        n_params=report.get("n_params"),
    )


def describe_file(model_path: Path) -> ModelReport:
    """What the judge sees in a GGUF (architecture, chat template, thinking, end-of-turn
    tokens, how answers are spelled), read in a child process from a vocab-only load."""
    from anvil_local.judge.report import ModelReport

    argv = [sys.executable, "-m", "anvil_local.judge.describe", str(model_path)]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=CHILD_TIMEOUT
        )
    except subprocess.TimeoutExpired as exc:
        raise NativeProbeFailed(
            f"reading {model_path.name} took over {CHILD_TIMEOUT:.0f} s"
        ) from exc
    if done.returncode < 0:
        raise NativeCrash(crash_message(-done.returncode, model_path))
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = [x for x in (done.stderr or done.stdout or "").strip().splitlines() if x.strip()]
        reason = tail[-1] if tail else f"exit status {done.returncode}"
        raise NativeProbeFailed(f"llama.cpp cannot read {model_path.name}: {reason}")
    return ModelReport.from_json(lines[-1])


def _verdict_path(key: str) -> Path:
    return cache_dir() / "native" / f"{key}.json"


def ensure_native_ok(model_path: Path, threads: int, n_gpu_layers: int = 0) -> None:
    """Raise NativeCrash if llama.cpp cannot decode `model_path` on this host; cheap after the
    first passing check for the same library build, CPU and model."""
    if os.environ.get(CHECK_ENV, "1") == "0":
        return
    key = check_key(model_path, n_gpu_layers)
    verdict = _verdict_path(key)
    if verdict.is_file():
        return
    try:
        result = probe(model_path, threads, n_gpu_layers)
    except NativeProbeFailed as exc:
        # Not a crash: the caller's own load reports the real error with its own message.
        log.debug("native check inconclusive: %s", exc)
        return
    verdict.parent.mkdir(parents=True, exist_ok=True)
    tmp = verdict.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"ok": True, "system_info": result.system_info}))
    tmp.replace(verdict)
    log.info("native check passed (llama-cpp-python %s)", result.llama_cpp_version)


def compiled_features(system_info: str) -> list[str]:
    """CPU features llama.cpp was compiled for, from its system info ('AVX2 = 1 | ...')."""
    found = []
    for item in system_info.replace("\n", "|").split("|"):
        name, _, value = item.rpartition("=")
        name = name.split(":")[-1].strip()
        if name and value.strip() == "1" and name not in found:
            found.append(name)
    return found


def kernel_family(system_info: str | None = None) -> str:
    """The widest vector kernels llama.cpp runs here ("avx512", "avx2", "neon", else
    "other"): hosts of one family give the same logits bit for bit, and two families round
    differently (the default judge's probabilities moved by up to 0.05 between an AVX2 and
    an AVX-512 build of the same llama.cpp)."""
    if system_info is None:
        import llama_cpp

        system_info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    features = set(compiled_features(system_info))
    for family, feature in (("avx512", "AVX512"), ("avx2", "AVX2"), ("neon", "NEON")):
        if feature in features:
            return family
    return "other"


#: llama.cpp's feature names -> the /proc/cpuinfo flag that must be present to run them.
FEATURE_FLAGS = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "AVX_VNNI": "avx_vnni",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}


def missing_features(system_info: str, flags: set[str]) -> list[str]:
    """Compiled-in features this CPU does not report (empty when flags are unknown)."""
    if not flags:
        return []
    return [
        name
        for name in compiled_features(system_info)
        if name in FEATURE_FLAGS and FEATURE_FLAGS[name] not in flags
    ]


def amx_instruction_count(library: Path) -> int | None:
    """How many AMX tile instructions `library` holds (objdump), None without objdump."""
    import shutil

    objdump = shutil.which("objdump")
    if objdump is None:
        return None
    done = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", str(library)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    count = 0
    for line in done.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[1].split(" ", 1)[0].strip() in _AMX_MNEMONICS:
            count += 1
    return count
