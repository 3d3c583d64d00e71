"""The real chat templates and vocabularies the llama-cpp-python source distribution ships.

The package this project builds from carries llama.cpp's test corpus: about 70 chat
templates from real model repositories (`vendor/llama.cpp/models/templates/*.jinja`) and
about 20 vocabulary-only GGUFs (`vendor/llama.cpp/models/ggml-vocab-*.gguf`). They are
fetched at test time from the package index with pip (the same source distribution of the
installed version, `--no-deps --no-binary :all:`), unpacked once under the cache dir and
reused; nothing of them is committed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

_MEMBERS = ("vendor/llama.cpp/models/templates/", "vendor/llama.cpp/models/ggml-vocab-")


def llama_cpp_version() -> str:
    return version("llama-cpp-python")


def corpus_dir(cache: Path) -> Path:
    """`<cache>/llama-cpp-corpus/<version>/` with `templates/*.jinja` and `vocab/*.gguf`,
    fetched and unpacked on first use."""
    target = cache / "llama-cpp-corpus" / llama_cpp_version()
    if (target / "complete").is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        work = Path(scratch)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"llama-cpp-python=={llama_cpp_version()}",
                "-d",
                str(work / "sdist"),
            ],
            check=True,
            stdin=subprocess.DEVNULL,
        )
        (archive,) = (work / "sdist").glob("llama_cpp_python-*.tar.gz")
        staged = work / "corpus"
        _unpack(archive, staged)
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        staged.rename(target)
    (target / "complete").write_text(llama_cpp_version())
    return target


def _unpack(archive: Path, into: Path) -> None:
    """Only the templates and the vocabulary GGUFs, flattened into two folders."""
    (into / "templates").mkdir(parents=True)
    (into / "vocab").mkdir()
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            path = member.name.split("/", 1)[-1]
            if not member.isfile() or not path.startswith(_MEMBERS):
                continue
            name = Path(path).name
            if name.endswith(".jinja"):
                folder = "templates"
            elif name.endswith(".gguf"):
                folder = "vocab"
            else:
                continue  # the tokenizer tests' .inp/.out files
            source = tar.extractfile(member)
            assert source is not None
            (into / folder / name).write_bytes(source.read())


def templates(root: Path) -> dict[str, str]:
    """Template name (file stem) -> its text."""
    return {
        p.stem: p.read_text(encoding="utf-8") for p in sorted((root / "templates").glob("*.jinja"))
    }


def vocabularies(root: Path) -> dict[str, Path]:
    """Vocabulary name (`llama-bpe` for `ggml-vocab-llama-bpe.gguf`) -> its file."""
    return {p.stem.removeprefix("ggml-vocab-"): p for p in sorted((root / "vocab").glob("*.gguf"))}
