"""Choosing the model a run judges with, in one place.

`resolve_model(spec, settings, workers)` turns what a user gave (a catalogue name, a .gguf
path, a ResolvedModel, or nothing) into the one `ResolvedModel` a run carries: nothing means
ANVIL_MODEL when set, else this host's tuned default judge (tuned on first use); a catalogue
name is pulled on first use; the thread count is the one given, else the host's tuned count
(else all cores) split over the run's workers; thinking is the one given, else the catalogue
entry's (`thinking = true`), else off. Nothing below this resolves again.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from anvil_local.errors import ModelError
from anvil_local.judge.convert import keeps_precision
from anvil_local.judge.model import ResolvedModel, adapter_identity
from anvil_local.judge.remote import RemoteSpec, is_url, resolve_remote
from anvil_local.judge.settings import JudgeSettings, default_threads
from anvil_local.models.catalogue import ModelEntry, find_remote_entry, get_entry, sha256_file
from anvil_local.models.store import ensure_model
from anvil_local.models.tuning import default_judge, tuned_threads

#: Pins the model runs use when no --model is given (a catalogue name or a .gguf path).
MODEL_ENV = "ANVIL_MODEL"
#: A decision server (or several, comma-separated) runs judge on when no --model is given.
JUDGE_URL_ENV = "ANVIL_JUDGE_URL"
#: The model to ask that server for (default: its only or first model).
JUDGE_MODEL_ENV = "ANVIL_JUDGE_MODEL"

ModelSpec = str | os.PathLike | ResolvedModel | RemoteSpec | None


def resolve_model(
    spec: ModelSpec = None,
    settings: JudgeSettings | None = None,
    workers: int = 1,
    tune: bool = True,
    remote: bool = True,
) -> ResolvedModel:
    """The run's model (see the module docstring). `tune` False never measures the host
    (an untuned host then gets the shipped file); `remote` False never turns to a decision
    server ($ANVIL_JUDGE_URL is not read; a server named outright is refused)."""
    servers = remote_specs(spec) if remote or spec is not None else ()
    if servers and not remote:
        raise ModelError(f"{spec} is a decision server; a local model is needed here")
    if servers:
        return resolve_remote(servers)
    if isinstance(spec, ResolvedModel) and spec.remote:
        return spec
    found = spec if isinstance(spec, ResolvedModel) else _identify(spec, tune)
    given = settings or (found.settings if isinstance(spec, ResolvedModel) else JudgeSettings())
    if given.thinking is None:  # the model's own setting (its catalogue entry)
        given = replace(given, thinking=bool(found.settings.thinking))
    model = found.with_settings(given)
    if model.settings.threads is None:
        threads = max(1, (tuned_threads() or default_threads()) // max(1, workers))
        model = model.with_settings(replace(model.settings, threads=threads))
    return model


def remote_specs(spec: Any) -> tuple[RemoteSpec, ...]:
    """The decision servers a spec names: a URL (`http://host:port#model`), a RemoteSpec or
    several, a remote catalogue entry; nothing given: $ANVIL_JUDGE_URL (comma-separated,
    with $ANVIL_JUDGE_MODEL). Empty for a local model."""
    if spec is None:
        urls = os.environ.get(JUDGE_URL_ENV, "").strip()
        if not urls:
            return ()
        if os.environ.get(MODEL_ENV, "").strip():
            raise ModelError(f"set {MODEL_ENV} or {JUDGE_URL_ENV}, not both")
        model = os.environ.get(JUDGE_MODEL_ENV, "").strip() or None
        return tuple(RemoteSpec.parse(u, model) for u in urls.split(",") if u.strip())
    if isinstance(spec, RemoteSpec):
        return (spec,)
    if isinstance(spec, tuple | list) and spec and all(isinstance(s, RemoteSpec) for s in spec):
        return tuple(spec)
    if is_url(spec):  # one server, or several: "http://a:8000,http://b:8000#model"
        urls, _, model = str(spec).partition("#")
        return tuple(RemoteSpec.parse(u, model or None) for u in urls.split(",") if u.strip())
    if isinstance(spec, str):
        entry = find_remote_entry(spec)
        if entry is not None:
            return entry.specs()
    return ()


def model_file(spec: str | os.PathLike | None, tune: bool = True) -> tuple[str, Path]:
    """(display name, file path) of a model spec, pulling a catalogue model if needed, without
    hashing a file given by path (what `anvil doctor` probes)."""
    name, path, _, entry = _locate(spec, tune)
    if entry is not None and entry.base:  # an adapter: the file llama.cpp loads is its base's
        return name, ensure_model(get_entry(entry.base))
    return name, path


def _identify(spec: str | os.PathLike | None, tune: bool) -> ResolvedModel:
    name, path, sha, entry = _locate(spec, tune)
    source, source_sha, faithful = "", "", False
    if entry is not None and entry.source:
        source, source_sha = entry.source, entry.source_sha256
        faithful = keeps_source_precision(entry)
    settings = JudgeSettings(thinking=entry.thinking if entry is not None else False)
    if entry is not None and entry.base:
        return _with_adapter(entry, path, settings)
    return ResolvedModel(
        name,
        str(path),
        sha or sha256_file(path),
        settings,
        source,
        source_sha,
        faithful,
        format=(entry.format or "").upper() if entry is not None else "",
    )


def keeps_source_precision(entry: ModelEntry) -> bool:
    """Whether a converted entry gives every weight more bits than the file it came from (an
    adapter merged into its base: the base's file it was trained on), so what was fitted on
    that source may hold on it; False for an unknown source."""
    try:
        origin = get_entry(entry.source)
        if origin.base:
            origin = get_entry(origin.base)
    except ModelError:
        return False
    return keeps_precision(origin.format, entry.format)


def _with_adapter(entry: ModelEntry, adapter: Path, settings: JudgeSettings) -> ResolvedModel:
    """An adapter entry: its base's own file (the one it was trained on, never a tuned
    conversion) with the adapter over it, under the pair's identity."""
    base = get_entry(entry.base)
    if base.base:
        raise ModelError(f"{entry.name}: its base {base.name} is an adapter itself")
    path = ensure_model(base)
    settings = replace(settings, thinking=base.thinking)
    return ResolvedModel(
        entry.name,
        str(path),
        adapter_identity(base.sha256, entry.sha256),
        settings,
        adapter=str(adapter),
        adapter_sha256=entry.sha256,
        base_sha256=base.sha256,
    )


def _locate(
    spec: str | os.PathLike | None, tune: bool
) -> tuple[str, Path, str | None, ModelEntry | None]:
    """(display name, file path, known sha256 or None, catalogue entry or None)."""
    if spec is None:
        pinned = os.environ.get(MODEL_ENV, "").strip()
        if pinned:
            return _locate(pinned, tune)
        entry = default_judge(tune_now=tune)
        return entry.name, ensure_model(entry), entry.sha256, entry
    text = os.fspath(spec)
    candidate = Path(text).expanduser()
    if candidate.suffix == ".gguf" or os.sep in text or candidate.is_file():
        if not candidate.is_file():
            raise ModelError(f"no model file at {candidate}")
        return candidate.name, candidate.resolve(), None, None
    entry = get_entry(text)
    return entry.name, ensure_model(entry), entry.sha256, entry
