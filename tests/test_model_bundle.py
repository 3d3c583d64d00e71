"""A kit built from this checkout, installed into a fresh virtual environment with the package
index switched off (PIP_NO_INDEX, no find-links but the kit's, a proxy to nowhere), runs the
README's main job. The llama-cpp-python wheel pip cached when this environment was built is
reused (the portable build compiles for a long time); when pip cached none, it is built once
with the project's CMake include and kept under the user cache dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import platformdirs
import pytest

from anvil_local.bundle import KitRequest, verify_kit, write_kit
from anvil_local.judge.native import BUILD_FILE
from anvil_local.models.catalogue import default_entry

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
NOWHERE = "http://127.0.0.1:9"
#: Packages only an optional extra brings: none may reach a kit's install.
EXTRAS_ONLY = {"torch", "transformers", "peft", "scipy", "scikit-learn", "matplotlib", "ray"}


def cached_llama_wheel() -> Path:
    """The llama-cpp-python wheel of the installed version that pip cached, else one built
    once (`pip wheel --no-deps`, the project's CMAKE_ARGS) into the user cache dir."""
    wanted = version("llama-cpp-python")
    name = f"llama_cpp_python-{wanted}-"
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "cache", "list", "llama_cpp_python", "--format=abspath"],
        capture_output=True,
        text=True,
    ).stdout.split()
    mine = Path(platformdirs.user_cache_dir("anvil-local")) / "wheels"
    found = [Path(p) for p in listed if Path(p).name.startswith(name)]
    found += sorted(mine.glob(f"{name}*.whl"))
    if found:
        return found[0]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(mine),
         f"llama-cpp-python=={wanted}"],
        check=True,
        env={**os.environ, "CMAKE_ARGS": f"-DCMAKE_PROJECT_INCLUDE={BUILD_FILE}"},
    )  # fmt: skip
    return next(mine.glob(f"{name}*.whl"))


def offline(tmp_path: Path) -> dict[str, str]:
    """No index, no pip configuration, a proxy to nowhere, fresh anvil dirs; the model
    pinned, as every test pins it, so the run does not tune the host for minutes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    env.update(
        PIP_NO_INDEX="1",
        PIP_CONFIG_FILE=os.devnull,
        HTTPS_PROXY=NOWHERE,
        HTTP_PROXY=NOWHERE,
        https_proxy=NOWHERE,
        http_proxy=NOWHERE,
        ANVIL_DATA_DIR=str(tmp_path / "offline-data"),
        ANVIL_CACHE_DIR=str(tmp_path / "offline-cache"),
        ANVIL_MODEL=default_entry().name,
        PATH=os.defpath,
    )
    return env


def test_a_kit_installs_with_the_index_off_and_runs_the_readme_job(
    tmp_path: Path, real_data_dir: Path
):
    kit = write_kit(tmp_path / "kit", KitRequest(llama_wheel=cached_llama_wheel())).path
    held = verify_kit(kit)
    assert f"models/{default_entry().file}" in held["files"]

    env = offline(tmp_path)
    venv = tmp_path / "venv"
    install = subprocess.run(
        ["sh", str(kit / "install.sh"), str(venv)],
        env={**env, "PYTHON": sys.executable},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert f"stored {kit}/models/{default_entry().file} as {default_entry().name}" in install.stdout
    assert "Successfully installed" in install.stdout

    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    installed = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    assert {"anvil-local", "llama-cpp-python", "outlines", "llguidance"} <= installed
    assert not installed & EXTRAS_ONLY

    job = subprocess.run(
        [str(venv / "bin" / "anvil"), "eval",
         "--metric", "examples/headings.toml", "--metric", "examples/headings_llm.toml",
         "--data", "examples/meeting_summaries.jsonl", "--out", "results.jsonl"],
        env=env,
        cwd=kit,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert job.returncode in (0, 1), job.stderr
    lines = [json.loads(line) for line in (kit / "results.jsonl").read_text().splitlines()]
    results = [line for line in lines if "metric" in line]
    assert len(results) == 8, lines  # 4 cases x 2 metrics
    assert all(r.get("error") in (None, "") for r in results), results
    assert {r["model"] for r in results} == {default_entry().name}
