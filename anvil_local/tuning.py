"""Host tuning: which file of the default judge, and how many threads, run fastest here.

llama.cpp's CPU kernels read some weight formats much faster than others (Q8_0 about 1.9x
faster than Q4_1 on x86-64 with AVX-512), and the best thread count depends on the host (SMT
siblings, shared cores). Tuning runs the `anvil doctor` probe on the default model and on its
conversions that keep its precision, at a few thread counts, once per host, and records the
choice in the data dir (one file per host, so a shared home directory serves several kinds
of machine). Runs without `--model` then use it; `--model NAME` or ANVIL_MODEL pins a file.

Only conversions that give every weight more bits are candidates (`keeps_precision`), and
one replaces the shipped file only when it is clearly faster (`MARGIN`), so the faster
default is the same judge up to kernel rounding, and two similar hosts pick the same file.
Threads do not change results (logits are bit-identical across thread counts on the CPU).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: tuners are not serialized
    fcntl = None  # type: ignore[assignment]

from anvil_local.catalogue import ModelEntry, data_dir, default_entry, get_entry
from anvil_local.errors import AnvilError, ModelError

log = logging.getLogger(__name__)

#: Pins the model runs use when no --model is given (a catalogue name or a .gguf path).
MODEL_ENV = "ANVIL_MODEL"
#: The formats tuning converts to when none are named.
DEFAULT_FORMATS = ("Q8_0",)
#: How much faster (probe seconds) a converted file must be to replace the shipped one.
MARGIN = 1.10
#: The probe's call: a 256-token prompt, then 32 greedy steps (`judge.canary`).
PROBE_PROMPT_TOKENS = 256
PROBE_GENERATED_TOKENS = 32
_VERSION = 1


class TuningError(AnvilError):
    """Tuning could not measure or record the host's choice."""


@dataclass(frozen=True)
class Measurement:
    """The probe on one file at one thread count (best of 3 inside the probe)."""

    model: str
    format: str
    threads: int
    prompt_tokens_per_s: float
    generated_tokens_per_s: float

    @property
    def seconds(self) -> float:
        """Time for the probe's judge-shaped call; prompt reading dominates it."""
        return (
            PROBE_PROMPT_TOKENS / self.prompt_tokens_per_s
            + PROBE_GENERATED_TOKENS / self.generated_tokens_per_s
        )


@dataclass(frozen=True)
class HostProfile:
    """What tuning chose on one host, and the measurements it chose from."""

    host: str
    cpu: str
    llama_cpp: str
    source: str
    source_sha256: str
    use: str
    threads: int
    measured: tuple[Measurement, ...]
    tuned_at: str

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["measured"] = [asdict(m) for m in self.measured]
        return {"version": _VERSION, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostProfile:
        if data.get("version") != _VERSION:
            raise ValueError(f"version {data.get('version')!r}")
        fields = {k: v for k, v in data.items() if k != "version"}
        fields["measured"] = tuple(Measurement(**m) for m in fields["measured"])
        return cls(**fields)

    def best(self, model: str) -> Measurement | None:
        """The fastest measurement of one file."""
        found = [m for m in self.measured if m.model == model]
        return min(found, key=lambda m: m.seconds) if found else None


def _cores() -> int:
    from anvil_local.judge.settings import default_threads

    return default_threads()


def _cpu_name() -> str:
    from anvil_local.judge.native import cpu_identity

    for line in cpu_identity().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def host_key() -> str:
    """The CPU (model and features), the cores this process may use and the llama.cpp
    version: what decides which file and thread count are fastest."""
    from anvil_local.judge.native import cpu_identity, llama_cpp_version

    text = f"{cpu_identity()}|{_cores()}|{llama_cpp_version() or ''}"
    return hashlib.sha256(text.encode()).hexdigest()


def profile_path() -> Path:
    return data_dir() / "hosts" / f"{host_key()[:16]}.json"


def load_profile() -> HostProfile | None:
    """This host's profile; None when it was never tuned (or the file is unreadable)."""
    path = profile_path()
    if not path.is_file():
        return None
    try:
        return HostProfile.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.warning("ignoring the host profile %s (%s); `anvil models tune` rewrites it", path, exc)
        return None


def tuned_threads() -> int | None:
    """The thread count tuning measured fastest on this host, if it was tuned."""
    profile = load_profile()
    return profile.threads if profile is not None else None


def thread_options(cores: int) -> list[int]:
    """All cores, and half of them (where SMT siblings share a core, half is often faster)."""
    return sorted({cores, max(1, cores // 2)}, reverse=True)


def candidate_formats(entry: ModelEntry, formats: Sequence[str]) -> list[str]:
    """The requested formats, checked: each must keep the source's precision."""
    from anvil_local.judge.convert import FORMATS, keeps_precision

    chosen = []
    for fmt in (f.upper() for f in formats):
        if fmt not in FORMATS:
            raise TuningError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")
        if not keeps_precision(entry.format, fmt):
            raise TuningError(
                f"{fmt} does not hold more bits per weight than {entry.name}'s "
                f"{entry.format or 'unknown format'}, so it would be another judge; "
                f"convert it with `anvil models convert` and pin it with --model instead"
            )
        if fmt not in chosen:
            chosen.append(fmt)
    return chosen


def choose(
    measured: Sequence[Measurement], original: str, margin: float = MARGIN
) -> tuple[str, int]:
    """(file, threads): the fastest converted file if it beats the original's best by
    `margin`, else the original; then that file's fastest thread count."""

    def best(model: str) -> Measurement:
        return min((m for m in measured if m.model == model), key=lambda m: m.seconds)

    base = best(original)
    pick = base
    for model in dict.fromkeys(m.model for m in measured if m.model != original):
        other = best(model)
        if other.seconds * margin <= base.seconds and other.seconds < pick.seconds:
            pick = other
    return pick.model, pick.threads


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    """One tuner per data dir at a time (two first runs started together wait, not race)."""
    folder = data_dir() / "hosts"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as handle:
        if fcntl is None:  # pragma: no cover
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def tune(
    formats: Sequence[str] = DEFAULT_FORMATS,
    threads: Sequence[int] | None = None,
    rounds: int = 1,
    progress: Callable[[str], None] | None = None,
) -> HostProfile:
    """Measure the default model and its precision-keeping conversions (converting those
    not yet present) at each thread count, in interleaved rounds; record and return the
    host's choice."""
    from anvil_local.judge.native import (
        NativeProbeFailed,
        ensure_native_ok,
        llama_cpp_version,
        probe,
    )
    from anvil_local.pull import convert, ensure_model

    source = default_entry()
    wanted = candidate_formats(source, formats)
    options = sorted(set(threads), reverse=True) if threads else thread_options(_cores())
    say = progress or (lambda text: log.info("%s", text))
    with _lock():
        path = ensure_model(source)
        ensure_native_ok(path, _cores())  # a build this CPU cannot run fails here, in one line
        files = [source]
        for fmt in wanted:
            say(f"converting {source.name} to {fmt}")
            files.append(convert(source.name, fmt))
        best: dict[tuple[str, int], Measurement] = {}
        for round_number in range(rounds):
            for entry in files:
                for count in options:
                    say(f"measuring {entry.name} with {count} threads (round {round_number + 1})")
                    try:
                        result = probe(entry.store_path(), count, throughput=True)
                    except NativeProbeFailed as exc:
                        raise TuningError(f"could not measure {entry.name}: {exc}") from exc
                    found = Measurement(
                        entry.name,
                        entry.format,
                        count,
                        float(result.prompt_tokens_per_s or 0.0),
                        float(result.generated_tokens_per_s or 0.0),
                    )
                    if found.prompt_tokens_per_s <= 0 or found.generated_tokens_per_s <= 0:
                        raise TuningError(f"the probe of {entry.name} measured no speed")
                    key = (entry.name, count)
                    if key not in best or found.seconds < best[key].seconds:
                        best[key] = found
        measured = tuple(best.values())
        use, count = choose(measured, source.name)
        profile = HostProfile(
            host=host_key(),
            cpu=_cpu_name(),
            llama_cpp=llama_cpp_version() or "",
            source=source.name,
            source_sha256=source.sha256,
            use=use,
            threads=count,
            measured=measured,
            tuned_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        )
        _write(profile)
    return profile


def _write(profile: HostProfile) -> None:
    path = profile_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(profile.to_dict(), indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def default_judge(tune_now: bool = True) -> ModelEntry:
    """The catalogue entry runs without --model use: ANVIL_MODEL's when it names a catalogue
    model, else this host's tuned choice (tuning first, once, when `tune_now`), else the
    catalogue default."""
    source = default_entry()
    profile = load_profile()
    stale = profile is not None and (
        profile.source != source.name or profile.source_sha256 != source.sha256
    )
    if (profile is None or stale) and tune_now:
        log.warning(
            "choosing the fastest file and thread count for %s on this host (once; "
            "`anvil models tune` repeats it, --model or %s pins a file)",
            source.name,
            MODEL_ENV,
        )
        try:
            profile = tune()
        except (TuningError, ModelError, OSError) as exc:
            log.warning("tuning failed (%s); using %s as shipped", exc, source.name)
            return source
        chosen = profile.best(profile.use)
        log.warning(
            "the default judge here is %s with %d threads (%.0f prompt tokens/s)",
            profile.use,
            profile.threads,
            chosen.prompt_tokens_per_s if chosen else 0.0,
        )
    if profile is None or stale or profile.use == source.name:
        return source
    try:
        entry = get_entry(profile.use)
    except ModelError:
        entry = None
    if entry is None or not entry.store_path().is_file():
        log.warning(
            "the tuned file %s is gone; using %s (`anvil models tune` chooses again)",
            profile.use,
            source.name,
        )
        return source
    return entry
