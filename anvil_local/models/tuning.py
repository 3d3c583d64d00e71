"""Host tuning: which file of the default judge, and how many threads, run fastest here.

llama.cpp's CPU kernels read some weight formats much faster than others (Q8_0 about 1.9x
faster than Q4_1 on x86-64 with AVX-512), and the best thread count depends on the host (SMT
siblings, shared cores). Tuning runs the `anvil doctor` probe on the default model and on its
conversions that keep its precision, at a few thread counts, in interleaved rounds, once per
host, and records the choice in the data dir (one file per host, so a shared home directory
serves several kinds of machine). Runs without `--model` then use it; `--model NAME` or
ANVIL_MODEL pins a file.

A busy machine must not decide for a quiet one: a choice measured while other processes
used the CPU (read from /proc/stat around every probe) is not recorded. On a quiet machine
noise is measured away instead of refused: after the first rounds, the candidates whose
comparison the choice hangs on are measured again (`settle.decide` says which) until the
choice holds wherever their medians lie, or the rounds or the time budget run out; only a
certain choice is recorded, so a losing candidate's noise cannot block a clear winner and
two near-equal ones are not decided by chance. Nothing recorded: runs use the shipped file
on all cores and say why, and the next run after `DEFER_SECONDS` tries again.

Only conversions that give every weight more bits are candidates (`keeps_precision`), and
one replaces the shipped file only when it is clearly faster (`MARGIN`), so the faster
default is the same judge up to kernel rounding, and two similar hosts pick the same file.
Fewer threads than all cores are chosen on the same margin. Threads do not change results
(logits are bit-identical across thread counts on the CPU).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: tuners are not serialized
    fcntl = None  # type: ignore[assignment]

from anvil_local.errors import AnvilError, ModelError, NativeProbeFailed, TuningError
from anvil_local.judge.convert import FORMATS, keeps_precision
from anvil_local.judge.native import cpu_identity, ensure_native_ok, llama_cpp_version, probe
from anvil_local.judge.settings import default_threads
from anvil_local.models.catalogue import ModelEntry, default_entry, get_entry
from anvil_local.models.cpu_load import CpuMeter
from anvil_local.models.settle import Decision, decide, median_span
from anvil_local.models.settle import choose as _choose
from anvil_local.models.store import convert, ensure_model
from anvil_local.paths import data_dir

log = logging.getLogger(__name__)

#: The formats tuning converts to when none are named.
DEFAULT_FORMATS = ("Q8_0",)
#: Interleaved rounds of every candidate when none are asked for.
DEFAULT_ROUNDS = 3
#: The most rounds of one candidate while the choice is uncertain.
MAX_ROUNDS = 12
#: Seconds of measuring (first rounds included) after which no further round starts.
BUDGET_SECONDS = 180.0
#: How much faster (probe seconds) a converted file, or fewer threads, must be to be chosen.
MARGIN = 1.10
#: The share of this process's cores that other processes may use while it measures.
BUSY_LIMIT = 0.25
#: After a measurement that could not be recorded, runs wait this long before trying again.
DEFER_SECONDS = 3600
#: The probe's call: a 256-token prompt, then 32 greedy steps (`judge.canary`).
PROBE_PROMPT_TOKENS = 256
PROBE_GENERATED_TOKENS = 32
_VERSION = 2  # 2: medians over rounds, their spread and the CPU others used (+ intervals)


@dataclass(frozen=True)
class Measurement:
    """The probe on one file at one thread count: the median over its rounds, how far the
    rounds were apart, the share of the CPU other processes used meanwhile, and the interval
    of probe seconds the median lies in (`low`, `high`; 0 in profiles written before)."""

    model: str
    format: str
    threads: int
    prompt_tokens_per_s: float
    generated_tokens_per_s: float
    rounds: int = 1
    spread: float = 0.0
    others_cpu: float = 0.0
    low: float = 0.0
    high: float = 0.0

    @property
    def seconds(self) -> float:
        """Time for the probe's judge-shaped call; prompt reading dominates it."""
        return probe_seconds(self.prompt_tokens_per_s, self.generated_tokens_per_s)

    @property
    def span(self) -> tuple[float, float]:
        """Where the median probe seconds lies, from the rounds (`settle.median_span`);
        the median alone for a measurement stored without one."""
        if self.high <= 0:
            return self.seconds, self.seconds
        return self.low, self.high


def probe_seconds(prompt_tokens_per_s: float, generated_tokens_per_s: float) -> float:
    return (
        PROBE_PROMPT_TOKENS / prompt_tokens_per_s + PROBE_GENERATED_TOKENS / generated_tokens_per_s
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
            raise ValueError(f"version {data.get('version')!r}, written before noise checks")
        fields = {k: v for k, v in data.items() if k != "version"}
        fields["measured"] = tuple(Measurement(**m) for m in fields["measured"])
        return cls(**fields)

    def best(self, model: str) -> Measurement | None:
        """The fastest measurement of one file."""
        found = [m for m in self.measured if m.model == model]
        return min(found, key=lambda m: m.seconds) if found else None

    def chosen(self) -> Measurement | None:
        """The measurement of the recorded choice (file and thread count)."""
        return next(
            (m for m in self.measured if (m.model, m.threads) == (self.use, self.threads)),
            None,
        )


@dataclass(frozen=True)
class Tuned:
    """What a tuning run found: the profile, whether it was recorded (else why not), and
    what decided the choice."""

    profile: HostProfile
    recorded: bool
    reason: str = ""
    basis: str = ""


#: One probe: prompt tokens/s, generated tokens/s, the share of the CPU others used (None
#: where it cannot be read).
Round = tuple[float, float, float | None]
#: Measures one file at one thread count once (the probe, or a test's stand-in).
Measurer = Callable[[ModelEntry, int], Round]


# -- the host ----------------------------------------------------------------------------


def _cores() -> int:
    return default_threads()


def _cpu_name() -> str:
    for line in cpu_identity().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def host_key() -> str:
    """The CPU (model and features), the cores this process may use and the llama.cpp
    version: what decides which file and thread count are fastest."""
    text = f"{cpu_identity()}|{_cores()}|{llama_cpp_version() or ''}"
    return hashlib.sha256(text.encode()).hexdigest()


def profile_path() -> Path:
    return data_dir() / "hosts" / f"{host_key()[:16]}.json"


def _deferred_path() -> Path:
    return profile_path().with_suffix(".deferred.json")


# -- the profile -------------------------------------------------------------------------


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


def deferred() -> str | None:
    """Why the last automatic tuning recorded nothing, while runs should still wait."""
    path = _deferred_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if time.time() - float(data["at"]) < DEFER_SECONDS:
            return str(data["reason"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _write(profile: HostProfile) -> None:
    _write_json(profile_path(), profile.to_dict())
    _deferred_path().unlink(missing_ok=True)


def _defer(reason: str) -> None:
    _write_json(_deferred_path(), {"reason": reason, "at": time.time()})


# -- measuring and choosing --------------------------------------------------------------


def thread_options(cores: int) -> list[int]:
    """All cores, and half of them (where SMT siblings share a core, half is often faster)."""
    return sorted({cores, max(1, cores // 2)}, reverse=True)


def candidate_formats(entry: ModelEntry, formats: Sequence[str]) -> list[str]:
    """The requested formats, checked: each must keep the source's precision."""
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
    """(file, threads) the rule picks from these medians (`settle.choose`)."""
    return _choose(measured, original, margin)


def summarise(model: ModelEntry, threads: int, runs: Sequence[Round]) -> Measurement:
    """One file at one thread count over its rounds: (prompt tok/s, generated tok/s, share
    of the CPU others used) each; the median round, the spread of probe seconds and where
    the median lies."""
    seconds = [probe_seconds(p, g) for p, g, _ in runs]
    middle = statistics.median(seconds)
    spread = (max(seconds) - min(seconds)) / middle if len(runs) > 1 else 0.0
    median_run = sorted(runs, key=lambda r: probe_seconds(r[0], r[1]))[(len(runs) - 1) // 2]
    others = [o for _, _, o in runs if o is not None]
    low, high = median_span(seconds)
    return Measurement(
        model.name,
        model.format,
        threads,
        float(median_run[0]),
        float(median_run[1]),
        rounds=len(runs),
        spread=round(spread, 4),
        others_cpu=round(max(others), 4) if others else 0.0,
        low=round(low, 6),
        high=round(high, 6),
    )


def busy(measured: Sequence[Measurement], busy_limit: float = BUSY_LIMIT) -> str:
    """Why the machine was too busy to measure on ("" when it was quiet enough)."""
    busiest = max(measured, key=lambda m: m.others_cpu)
    if busiest.others_cpu > busy_limit:
        return (
            f"other processes used {busiest.others_cpu:.0%} of the CPU while "
            f"{busiest.model} was measured with {busiest.threads} threads (limit "
            f"{busy_limit:.0%}): the machine is busy"
        )
    return ""


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
    rounds: int = DEFAULT_ROUNDS,
    progress: Callable[[str], None] | None = None,
    busy_limit: float = BUSY_LIMIT,
    meter: CpuMeter | None = None,
    *,
    max_rounds: int = MAX_ROUNDS,
    budget_s: float = BUDGET_SECONDS,
    settle: bool = True,
    measure: Measurer | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Tuned:
    """Measure the default model and its precision-keeping conversions (converting those
    not yet present) at each thread count in `rounds` interleaved rounds, then measure
    again the candidates the choice is still uncertain between (up to `max_rounds` each,
    while `budget_s` lasts); record the choice once it is certain. A round that finds the
    machine busy ends the measuring (more rounds would not change the verdict).
    `settle=False` records the medians' choice after the first rounds, certain or not."""
    if rounds < 1:
        raise TuningError("tuning needs at least one round")
    source = default_entry()
    wanted = candidate_formats(source, formats)
    options = sorted(set(threads), reverse=True) if threads else thread_options(_cores())
    say = progress or (lambda text: log.info("%s", text))
    measure = measure or partial(_measure_once, meter=meter or CpuMeter())
    with _lock():
        path = ensure_model(source)
        ensure_native_ok(path, _cores())  # a build this CPU cannot run fails here, in one line
        files = [source]
        for fmt in wanted:
            say(f"converting {source.name} to {fmt}")
            files.append(convert(source.name, fmt))
        candidates = [(entry, count) for entry in files for count in options]
        started = clock()
        runs: dict[tuple[str, int], list[Round]] = {}

        def summary() -> tuple[Measurement, ...]:
            return tuple(summarise(e, n, runs[(e.name, n)]) for e, n in candidates)

        def measure_round(todo: Sequence[tuple[ModelEntry, int]]) -> str:
            for entry, count in todo:
                done = runs.setdefault((entry.name, count), [])
                say(f"measuring {entry.name} with {count} threads (round {len(done) + 1})")
                done.append(measure(entry, count))
            return busy(summary(), busy_limit)

        why = ""
        for _ in range(rounds):
            why = measure_round(candidates)
            if why:
                break
        decision = decide(summary(), source.name, MARGIN)
        while not why and settle and not decision.certain:
            todo = [(e, n) for e, n in candidates if (e.name, n) in decision.contested]
            todo = [(e, n) for e, n in todo if len(runs[(e.name, n)]) < max_rounds]
            spent = clock() - started
            per_probe = spent / sum(len(r) for r in runs.values())
            if not todo or spent + per_probe * len(todo) > budget_s:
                why = _gave_up(decision, summary(), spent, budget_s, max_rounds)
                break
            say(f"not certain yet: {decision.why}; measuring those again")
            why = measure_round(todo)
            decision = decide(summary(), source.name, MARGIN)
        measured = summary()
        profile = HostProfile(
            host=host_key(),
            cpu=_cpu_name(),
            llama_cpp=llama_cpp_version() or "",
            source=source.name,
            source_sha256=source.sha256,
            use=decision.model,
            threads=decision.threads,
            measured=measured,
            tuned_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        )
        if why:
            _defer(why)
            return Tuned(profile, recorded=False, reason=why, basis=decision.why)
        _write(profile)
    return Tuned(profile, recorded=True, basis=decision.why)


def _gave_up(
    decision: Decision,
    measured: Sequence[Measurement],
    spent: float,
    budget_s: float,
    max_rounds: int,
) -> str:
    most = max(m.rounds for m in measured)
    limit = f"{max_rounds} rounds" if most >= max_rounds else f"the {budget_s:.0f} s budget"
    return (
        f"{decision.why} after {most} rounds in {spent:.0f} s (limit: {limit}): "
        "too close to choose with confidence"
    )


def _measure_once(entry: ModelEntry, threads: int, meter: CpuMeter) -> Round:
    meter.start()
    try:
        result = probe(entry.store_path(), threads, throughput=True)
    except NativeProbeFailed as exc:
        raise TuningError(f"could not measure {entry.name}: {exc}") from exc
    others = meter.stop()
    prompt = float(result.prompt_tokens_per_s or 0.0)
    generated = float(result.generated_tokens_per_s or 0.0)
    if prompt <= 0 or generated <= 0:
        raise TuningError(f"the probe of {entry.name} measured no speed")
    return prompt, generated, others


# -- what runs use -----------------------------------------------------------------------


def default_judge(tune_now: bool = True) -> ModelEntry:
    """The catalogue entry runs without --model use: this host's tuned choice (tuning
    first, once, when `tune_now`), else the catalogue default as shipped."""
    source = default_entry()
    profile = load_profile()
    stale = profile is not None and (
        profile.source != source.name or profile.source_sha256 != source.sha256
    )
    if (profile is None or stale) and tune_now:
        waiting = deferred()
        if waiting is not None:
            log.info("not tuning yet (%s); using %s as shipped", waiting, source.name)
            return source
        # fetched once, here: a model that cannot be fetched ends the run in one line
        # (ModelMissing) before tuning starts, instead of failing again for the run itself
        ensure_model(source)
        log.warning(
            "choosing the fastest file and thread count for %s on this host (once; "
            "`anvil models tune` repeats it, --model or ANVIL_MODEL pins a file)",
            source.name,
        )
        try:
            found = tune()
        except (AnvilError, OSError) as exc:
            log.warning("tuning failed (%s); using %s as shipped", exc, source.name)
            return source
        if not found.recorded:
            log.warning(
                "nothing recorded: %s; using %s as shipped on all cores (tuning is tried "
                "again in %d minutes, or run `anvil models tune` on a quiet machine)",
                found.reason,
                source.name,
                DEFER_SECONDS // 60,
            )
            return source
        profile = found.profile
        chosen = profile.chosen()
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


def recheck(
    profile: HostProfile, now: Measurement, all_cores: Measurement | None = None
) -> list[str]:
    """How a fresh probe of the chosen file (at its thread count, and at all cores when
    that differs) disagrees with what tuning stored: a choice made on a busy machine, or a
    host that changed. Empty when they agree."""
    stored = profile.chosen()
    found: list[str] = []
    if stored is None:
        return ["the profile holds no measurement of its own choice"]
    ratio = now.prompt_tokens_per_s / stored.prompt_tokens_per_s
    if not 1 / 1.5 <= ratio <= 1.5:
        found.append(
            f"tuning measured {stored.prompt_tokens_per_s:.0f} prompt tokens/s for "
            f"{profile.use} with {profile.threads} threads, this probe "
            f"{now.prompt_tokens_per_s:.0f}"
        )
    faster = all_cores is not None and all_cores.seconds * MARGIN <= now.seconds
    if all_cores is not None and all_cores.threads != profile.threads and faster:
        found.append(
            f"{all_cores.threads} threads read {all_cores.prompt_tokens_per_s:.0f} prompt "
            f"tokens/s here against {now.prompt_tokens_per_s:.0f} with the "
            f"{profile.threads} tuning chose"
        )
    return found
