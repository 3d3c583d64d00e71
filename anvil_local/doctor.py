"""`anvil doctor`: is this install usable, and how fast is the judge here?

Everything native (llama.cpp's system info, the test decode, the throughput probe) runs in a
child process through `judge.native`, so the doctor itself cannot die of the crash it reports.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

from anvil_local.errors import AnvilError, NativeCrash

if TYPE_CHECKING:
    from anvil_local.models.catalogue import ModelEntry


@dataclass(frozen=True)
class Finding:
    """One line of the report; `problem` makes the install unusable (exit 1)."""

    label: str
    value: str
    problem: str | None = None
    warning: str | None = None


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _packages() -> list[Finding]:
    from anvil_local.judge.native import llama_cpp_dir

    found = [
        Finding("anvil-local", _version("anvil-local") or "not installed as a package"),
        Finding("python", f"{platform.python_version()} ({sys.executable})"),
    ]
    llama = _version("llama-cpp-python")
    if llama is None:
        found.append(
            Finding(
                "llama-cpp-python",
                "not installed",
                problem="llama-cpp-python is not installed; see the README's set-up command",
            )
        )
    else:
        found.append(Finding("llama-cpp-python", f"{llama} ({llama_cpp_dir()})"))
    for name in ("outlines", "llguidance"):
        found.append(Finding(name, _version(name) or "not installed"))
    return found


def _cpu() -> list[Finding]:
    from anvil_local.judge.native import cpu_flags, cpu_identity
    from anvil_local.judge.settings import JudgeSettings, default_threads
    from anvil_local.models.tuning import tuned_threads

    names = [x.split(":", 1)[1].strip() for x in cpu_identity().splitlines() if "model name" in x]
    model = names[0] if names else platform.processor() or platform.machine()
    flags = cpu_flags()
    amx = sorted(f for f in flags if f.startswith("amx"))
    advertised = f"; advertises {' '.join(amx)}" if amx else ""
    return [
        Finding("cpu", f"{model} ({platform.machine()}){advertised}"),
        Finding(
            "threads",
            f"{tuned_threads() or default_threads()} (the default for --threads, split over "
            f"--jobs; {'tuned' if tuned_threads() else 'all cores'})",
        ),
        Finding(
            "batch size",
            f"{JudgeSettings().n_batch} tokens (the default for --batch-size, by rule: a judge "
            "prompt in one or two batches; any split gives the same logits)",
        ),
    ]


def _tuning() -> list[Finding]:
    """Which file and thread count runs without --model use here, and why."""
    from anvil_local.models.resolve import MODEL_ENV
    from anvil_local.models.tuning import deferred, load_profile, profile_path

    pinned = os.environ.get(MODEL_ENV, "").strip()
    if pinned:
        return [Finding("default judge", f"{pinned} (pinned by ${MODEL_ENV})")]
    profile = load_profile()
    if profile is None:
        waiting = deferred()
        why = (
            f"the last tuning recorded nothing: {waiting}"
            if waiting
            else "not tuned on this host yet"
        )
        return [
            Finding(
                "default judge",
                f"the catalogue default as shipped: {why} (the first run without --model "
                "tunes, or `anvil models tune`)",
            )
        ]
    best = profile.best(profile.use)
    speed = f", {best.prompt_tokens_per_s:.0f} prompt tokens/s when tuned" if best else ""
    return [
        Finding(
            "default judge",
            f"{profile.use}, {profile.threads} threads{speed} (tuned {profile.tuned_at}; "
            f"{profile_path()})",
        )
    ]


def _library(system_info: str | None, crashed: bool) -> list[Finding]:
    from anvil_local.judge.native import (
        FEATURE_FLAGS,
        amx_instruction_count,
        compiled_features,
        cpu_flags,
        missing_features,
        native_libraries,
        rebuild_command,
    )

    libraries = native_libraries()
    if not libraries:
        return [Finding("native library", "not found", problem="llama.cpp's library is missing")]
    found = [Finding("native library", ", ".join(p.name for p in libraries))]
    if system_info is not None:
        found.append(Finding("llama.cpp", system_info.strip().replace("\n", " ")))
        built = [f for f in compiled_features(system_info) if f in FEATURE_FLAGS]
        missing = missing_features(system_info, cpu_flags())
        text = " ".join(built) or "-"
        if missing:
            found.append(
                Finding(
                    "built for",
                    text,
                    problem=f"built for {' '.join(missing)}, which this CPU lacks; rebuild: "
                    f"{rebuild_command()}",
                )
            )
        else:
            found.append(Finding("built for", f"{text} (all present on this CPU)"))
    counts = [(p, amx_instruction_count(p)) for p in libraries]
    if all(c is None for _, c in counts):
        found.append(Finding("AMX instructions", "unknown (objdump not found)"))
        return found
    holding = [(p, c) for p, c in counts if c]
    if not holding:
        found.append(Finding("AMX instructions", "none"))
        return found
    where = ", ".join(f"{c} in {p.name}" for p, c in holding)
    advice = f"rebuild without AMX: {rebuild_command()}"
    if crashed:
        found.append(Finding("AMX instructions", where, problem=advice))
    else:
        found.append(
            Finding(
                "AMX instructions",
                where,
                warning="they run here, but crash on VMs that advertise AMX without running it; "
                + advice,
            )
        )
    return found


def _variant() -> list[Finding]:
    """A portable build (an offline kit's): the CPU variant llama.cpp chose for this host."""
    from anvil_local.bundle.variant import built_variants, loaded_variant
    from anvil_local.judge.native import llama_cpp_dir

    package = llama_cpp_dir()
    built = built_variants(package / "lib") if package is not None else []
    if not built:
        return []  # a native build: one CPU backend, no choice
    chosen = loaded_variant(package / "lib")
    listed = f"of {len(built)} built: {', '.join(built)}"
    if chosen is None:
        why = "no CPU variant of this portable build loads on this host"
        return [Finding("cpu variant", f"none loaded ({listed})", problem=why)]
    return [Finding("cpu variant", f"{chosen} (chosen at load, {listed})")]


def _dirs() -> list[Finding]:
    from anvil_local.paths import CACHE_DIR_ENV, DATA_DIR_ENV, cache_dir, data_dir

    return [
        Finding("data dir", f"{data_dir()} (${DATA_DIR_ENV})"),
        Finding("cache dir", f"{cache_dir()} (${CACHE_DIR_ENV})"),
    ]


def _models() -> list[Finding]:
    from anvil_local.models.catalogue import entries, sha256_file

    found = []
    for entry in entries():
        path = entry.store_path()
        if not path.is_file():
            found.append(Finding(f"model {entry.name}", "not pulled"))
            continue
        digest = sha256_file(path)
        over = f"adapter over {entry.base}, " if entry.base else ""
        if digest == entry.sha256:
            found.append(Finding(f"model {entry.name}", f"{over}sha256 OK ({path})"))
        else:
            found.append(
                Finding(
                    f"model {entry.name}",
                    f"sha256 MISMATCH ({path})",
                    problem=f"{path} is damaged: `anvil models pull {entry.name} --force`",
                )
            )
    return found


#: the metric files shipped with a checkout that hold fitted heads or score maps
SHIPPED_METRICS = Path(__file__).resolve().parent.parent / "examples"


def _judge_entry(model: str | None) -> ModelEntry | None:
    """The catalogue entry a run with this --model (or none) judges with, without tuning or
    hashing; None for a file given by path."""
    from anvil_local.models.catalogue import get_entry
    from anvil_local.models.resolve import MODEL_ENV
    from anvil_local.models.tuning import default_judge

    name = model or os.environ.get(MODEL_ENV, "").strip() or None
    if name is None:
        return default_judge(tune_now=False)
    try:
        return get_entry(name)
    except AnvilError:
        return None


def _heads(model: str | None, root: Path = SHIPPED_METRICS) -> list[Finding]:
    """For the judge a run would use, which shipped heads and score maps apply, and on what
    evidence: fitted on this very file, or fitted on its source and shown to hold on this
    format (`holds_on`); the rest leave their scores uncalibrated here."""
    from anvil_local.models.catalogue import get_entry
    from anvil_local.models.resolve import keeps_source_precision
    from anvil_local.spec import load_metric

    files = sorted(p for p in root.rglob("*.toml") if "[calibration." in _text(p))
    if not files:
        return [Finding("heads", f"no shipped metric file with a head here ({root})")]
    entry = _judge_entry(model)
    if entry is None:
        return [Finding("heads", f"{model}: not a catalogue model; heads apply by sha256")]
    source = None
    if entry.source and keeps_source_precision(entry):
        source = (entry.source, entry.source_sha256)
    sha = entry.sha256
    if entry.base:  # an adapter's identity: nothing fitted on its base applies to it
        from anvil_local.judge.model import adapter_identity

        sha = adapter_identity(get_entry(entry.base).sha256, entry.sha256)
    found = []
    for path in files:
        try:
            calibration = load_metric(path).calibration
        except AnvilError as exc:
            found.append(Finding(f"head {path.name}", "unreadable", warning=str(exc)))
            continue
        if calibration is None:
            continue
        fitted, why, _ = calibration.lookup(entry.name, sha, source, entry.format)
        verdict = "applies" if fitted is not None else "not applied"
        found.append(Finding(f"head {path.name}", f"{verdict} on {entry.name}: {why}"))
    return found


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _probe(model: str | None, threads: int | None) -> tuple[list[Finding], str | None, bool]:
    """The test decode and throughput probe in a child process: (findings, system info,
    crashed)."""
    from anvil_local.judge.native import NativeProbeFailed, probe
    from anvil_local.judge.settings import default_threads
    from anvil_local.models.resolve import model_file

    try:
        name, path = model_file(model, tune=False)
    except AnvilError as exc:
        return [Finding("test decode", "no model", problem=exc.one_line())], None, False
    n = threads or default_threads()
    try:
        result = probe(Path(path), n, throughput=True)
    except NativeCrash as exc:
        return [Finding("test decode", "crashed", problem=str(exc))], None, True
    except NativeProbeFailed as exc:
        failed = Finding("test decode", "failed", problem=str(exc))
        return [failed, *model_findings(name, Path(path))], None, False
    speed = (
        f"{result.prompt_tokens_per_s:.0f} prompt tokens/s, "
        f"{result.generated_tokens_per_s:.0f} generated tokens/s ({name}, {n} threads)"
    )
    found = [Finding("test decode", f"OK ({name})"), Finding("throughput", speed)]
    found += model_findings(name, Path(path))
    if model is None:
        found += _recheck_tuning(name, Path(path), n, result)
    return found + _formats(name, n), result.system_info, False


def model_findings(name: str, path: Path) -> list[Finding]:
    """How the judge prompts this model: architecture, chat template (as it is, with the
    system text merged, or plain and why), thinking, end-of-turn tokens, how "10" and " Yes"
    are spelled. A template the judge cannot use is a warning, a model that cannot judge a
    problem."""
    from anvil_local.judge.native import NativeProbeFailed, describe_file
    from anvil_local.models.catalogue import entries

    try:
        report = describe_file(path)
    except (NativeCrash, NativeProbeFailed) as exc:
        return [Finding("chat template", "unknown", problem=str(exc))]
    setting = next((e.thinking for e in entries() if e.name == name), None)
    found = []
    for label, value in report.lines(setting):
        finding = Finding(label, value)
        if label == "judge":
            finding = Finding(label, value, problem=f"{name} cannot judge: pick a chat model")
        elif label == "chat template" and report.source == "plain":
            finding = Finding(
                label,
                value,
                warning="verdicts are asked outside the model's chat format; an instruct "
                "model judges worse so",
            )
        found.append(finding)
    return found


def _recheck_tuning(name: str, path: Path, threads: int, result: object) -> list[Finding]:
    """The stored tuning choice held against this probe: the chosen file at the chosen
    thread count, and at `threads` (all cores) when that differs."""
    from anvil_local.judge.native import NativeProbeFailed, probe
    from anvil_local.models.resolve import MODEL_ENV
    from anvil_local.models.tuning import Measurement, load_profile, recheck

    profile = load_profile()
    if os.environ.get(MODEL_ENV, "").strip() or profile is None or profile.use != name:
        return []

    def measured(found: object, count: int) -> Measurement:
        return Measurement(
            name,
            "",
            count,
            float(found.prompt_tokens_per_s or 0.0),  # type: ignore[attr-defined]
            float(found.generated_tokens_per_s or 0.0),  # type: ignore[attr-defined]
        )

    at_all = measured(result, threads)
    now = at_all
    if profile.threads != threads:
        try:
            now = measured(probe(path, profile.threads, throughput=True), profile.threads)
        except (NativeCrash, NativeProbeFailed) as exc:
            return [Finding("tuning check", "failed", problem=str(exc))]
    if now.prompt_tokens_per_s <= 0 or at_all.prompt_tokens_per_s <= 0:
        return [Finding("tuning check", "the probe measured no speed")]
    problems = recheck(profile, now, at_all if profile.threads != threads else None)
    if not problems:
        return [
            Finding(
                "tuning check",
                f"agrees with this probe ({now.prompt_tokens_per_s:.0f} prompt tokens/s with "
                f"{profile.threads} threads)",
            )
        ]
    return [
        Finding(
            "tuning check",
            "disagrees with this probe: " + "; ".join(problems),
            warning="the stored choice was probably measured on a busy machine, or the host "
            "changed: run `anvil models tune` on a quiet machine",
        )
    ]


def _formats(name: str, threads: int) -> list[Finding]:
    """The same probe on every other format of this model present here: the file it was
    converted from and every file `anvil models convert` made from that."""
    from anvil_local.judge.native import NativeProbeFailed, probe
    from anvil_local.models.catalogue import entries

    known = {e.name: e for e in entries()}
    root = known[name].source if name in known and known[name].source else name
    found = []
    for entry in entries():
        path = entry.store_path()
        if entry.name == name or root not in (entry.name, entry.source) or not path.is_file():
            continue
        try:
            result = probe(path, threads, throughput=True)
        except (NativeCrash, NativeProbeFailed) as exc:
            found.append(Finding(f"throughput {entry.format}", "failed", problem=str(exc)))
            continue
        found.append(
            Finding(
                f"throughput {entry.format or entry.name}",
                f"{result.prompt_tokens_per_s:.0f} prompt tokens/s, "
                f"{result.generated_tokens_per_s:.0f} generated tokens/s ({entry.name})",
            )
        )
    return found


def diagnose(
    model: str | None = None, threads: int | None = None, probe: bool = True
) -> list[Finding]:
    """Every finding, in the order they are shown."""
    found = _packages() + _cpu()
    system_info, crashed = None, False
    probed: list[Finding] = []
    if probe and _version("llama-cpp-python") is not None:
        probed, system_info, crashed = _probe(model, threads)
    found += _library(system_info, crashed) + _variant() + _tuning() + probed + _dirs()
    found += _models() + _heads(model)
    return found


def render(findings: list[Finding]) -> str:
    width = max(len(f.label) for f in findings)
    lines = []
    for f in findings:
        lines.append(f"{f.label.ljust(width)}  {f.value}")
        for note in (f.problem, f.warning):
            if note:
                kind = "problem" if note is f.problem else "warning"
                lines.append(f"{' ' * width}  {kind}: {note}")
    problems = [f for f in findings if f.problem]
    if problems:
        lines.append(f"{'status'.ljust(width)}  NOT USABLE ({len(problems)} problem(s) above)")
    else:
        lines.append(f"{'status'.ljust(width)}  OK")
    return "\n".join(lines)
