"""Offline kits without the network or a compiler: the manifest and its check, the patches of
the portable llama.cpp build, install.sh, which models travel, and a whole kit written with
pip stood in for. The real kit, installed with the index off, is test_model_bundle.py."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from anvil_local.bundle import KitRequest, Target, carry, llama, manifest, verify_kit, write_kit
from anvil_local.bundle import wheels as kit_wheels
from anvil_local.bundle.install import install_script
from anvil_local.cli import main
from anvil_local.errors import KitError
from anvil_local.models.catalogue import add_local, default_entry, get_entry

LLAMA_WHEEL = "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"


def llama_wheel(root: Path, variants: tuple[str, ...] = ()) -> Path:
    """A stand-in llama-cpp-python wheel: a native build's libraries, or a portable one's."""
    path = root / LLAMA_WHEEL
    libs = [f"libggml-cpu-{v}.so" for v in variants] or ["libggml-cpu.so"]
    with zipfile.ZipFile(path, "w") as wheel:
        for name in ["libggml.so", "libllama.so", *libs]:
            wheel.writestr(f"llama_cpp/lib/{name}", b"")
    return path


def small_kit(root: Path) -> Path:
    kit = root / "kit"
    (kit / "wheels").mkdir(parents=True)
    (kit / "wheels" / "a-1.0-py3-none-any.whl").write_bytes(b"wheel a")
    (kit / "models").mkdir()
    (kit / "models" / "m.gguf").write_bytes(b"GGUF" + b"\0" * 100)
    manifest.write_manifest(kit, {"anvil_local": "0.1.0"})
    return kit


# -- the manifest ------------------------------------------------------------------------


def test_an_intact_kit_verifies_and_lists_every_file_with_its_sha256(tmp_path: Path):
    kit = small_kit(tmp_path)
    found = verify_kit(kit)
    assert sorted(found["files"]) == ["models/m.gguf", "wheels/a-1.0-py3-none-any.whl"]
    assert found["files"]["wheels/a-1.0-py3-none-any.whl"]["sha256"] == manifest.file_sha256(
        kit / "wheels" / "a-1.0-py3-none-any.whl"
    )
    result = CliRunner().invoke(main, ["bundle", "verify", str(kit)])
    assert result.exit_code == 0, result.output
    assert "2 files match the manifest" in result.output


@pytest.mark.parametrize(
    "damage, expected",
    [
        pytest.param(lambda k: (k / "models" / "m.gguf").write_bytes(b"GGUF" + b"\1" * 100),
                     "models/m.gguf: sha256 differs", id="altered"),
        pytest.param(lambda k: (k / "models" / "m.gguf").write_bytes(b"GGUF"),
                     "models/m.gguf: 4 bytes, the manifest says 104", id="truncated"),
        pytest.param(lambda k: (k / "wheels" / "a-1.0-py3-none-any.whl").unlink(),
                     "wheels/a-1.0-py3-none-any.whl: missing", id="missing"),
        pytest.param(lambda k: (k / "wheels" / "b-2.0-py3-none-any.whl").write_bytes(b"x"),
                     "wheels/b-2.0-py3-none-any.whl: not in the manifest", id="stray"),
    ],
)  # fmt: skip
def test_a_damaged_kit_fails_in_one_line_naming_the_file(tmp_path: Path, damage, expected):
    kit = small_kit(tmp_path)
    damage(kit)
    with pytest.raises(KitError, match=expected):
        verify_kit(kit)
    result = CliRunner().invoke(main, ["bundle", "verify", str(kit)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and expected in lines[0]


def test_a_folder_without_a_manifest_is_no_kit(tmp_path: Path):
    result = CliRunner().invoke(main, ["bundle", "verify", str(tmp_path)])
    assert result.exit_code == 2
    assert "no manifest" in result.output


def test_the_kits_own_check_runs_on_a_bare_python(tmp_path: Path):
    """verify_kit.py is manifest.py itself, run with the standard library alone (-I: no
    site-packages, no anvil-local)."""
    kit = small_kit(tmp_path)
    script = tmp_path / "verify_kit.py"
    shutil.copyfile(manifest.__file__, script)
    ok = subprocess.run(
        [sys.executable, "-I", str(script), str(kit)], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    (kit / "models" / "m.gguf").write_bytes(b"broken")
    bad = subprocess.run(
        [sys.executable, "-I", str(script), str(kit)], capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "models/m.gguf" in bad.stderr


# -- the portable llama.cpp build ---------------------------------------------------------

CMAKE = """\
        ggml_add_cpu_backend_variant(haswell            SSE42 AVX F16C FMA AVX2 BMI2)
        ggml_add_cpu_backend_variant(icelake            SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI)
        ggml_add_cpu_backend_variant(alderlake          SSE42 AVX F16C FMA AVX2 BMI2 AVX_VNNI)
        if (NOT MSVC)
            # MSVC doesn't support AMX
            ggml_add_cpu_backend_variant(sapphirerapids SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8)
        endif()
"""


def test_the_portable_build_leaves_out_the_amx_variant_only():
    patched = llama.drop_amx_variants(CMAKE)
    active = [
        line.split("(")[1].split()[0]
        for line in patched.splitlines()
        if line.strip().startswith("ggml_add_cpu_backend_variant(")
    ]
    assert active == ["haswell", "icelake", "alderlake"]
    assert "# ggml_add_cpu_backend_variant(sapphirerapids" in patched
    with pytest.raises(KitError, match="no AMX CPU variant"):
        llama.drop_amx_variants(patched)  # nothing left to leave out: the file changed


def test_the_portable_build_loads_its_variants_from_the_package_at_import():
    source = (
        "_base_path = pathlib.Path('lib')\n"
        "# Load the library\n"
        "_lib = load_shared_library(_lib_base_name, _base_path)\n"
        "\n"
        "x = 1\n"
    )
    patched = llama.load_variants_at_import(source)
    assert patched.index("_lib = load_shared_library") < patched.index(
        "_load_cpu_variants(_base_path)"
    )
    assert patched.count("ggml_backend_load_all_from_path(str(path).encode())") == 1
    compile(patched, "llama_cpp.py", "exec")
    with pytest.raises(KitError):
        llama.load_variants_at_import("_lib = ctypes.CDLL('x')\n")
    assert llama.label_version('__version__ = "0.3.36"\n') == '__version__ = "0.3.36+portable"\n'


def test_the_portable_cmake_args_are_dynamic_dispatch_without_native_or_amx():
    args = llama.cmake_args()
    assert {"-DGGML_BACKEND_DL=ON", "-DGGML_CPU_ALL_VARIANTS=ON", "-DGGML_NATIVE=OFF"} <= set(args)
    include = next(a for a in args if a.startswith("-DCMAKE_PROJECT_INCLUDE="))
    assert "-mno-amx-tile" in Path(include.split("=", 1)[1]).read_text()


def test_a_wheel_for_another_architecture_is_not_built_here():
    llama.check_buildable(Target("3.12", ("manylinux_2_28_x86_64",)))
    with pytest.raises(KitError, match="--llama-wheel"):
        llama.check_buildable(Target("3.12", ("manylinux_2_28_aarch64",)))


def test_a_target_accepts_the_llama_wheels_own_platform():
    target = Target("3.12", ("manylinux_2_28_x86_64",)).with_platforms_of(Path(LLAMA_WHEEL))
    assert target.platforms == ("manylinux_2_28_x86_64", "linux_x86_64")
    assert target.pip_args() == [
        "--python-version", "3.12", "--implementation", "cp",
        "--platform", "manylinux_2_28_x86_64", "--platform", "linux_x86_64",
    ]  # fmt: skip
    assert Target().with_platforms_of(Path(LLAMA_WHEEL)).pip_args() == []


# -- install.sh --------------------------------------------------------------------------


def test_install_script_installs_from_the_kit_alone_and_stores_its_models(tmp_path: Path):
    text = install_script("0.1.0", "3.11", ["models/SmolLM2-135M-Instruct.Q4_1.gguf"])
    assert "--no-index" in text and '--find-links "$KIT/wheels" "anvil-local==0.1.0"' in text
    assert "PIP_CONFIG_FILE=/dev/null" in text and "-u PIP_FIND_LINKS" in text
    assert 'models add "$KIT/$model"' in text and "models/SmolLM2-135M-Instruct.Q4_1.gguf" in text
    assert text.index("verify_kit.py") < text.index("pip install") < text.index('anvil" doctor')
    script = tmp_path / "install.sh"
    script.write_text(text)
    assert subprocess.run(["sh", "-n", str(script)]).returncode == 0
    bare = install_script("0.1.0", "3.11", [])
    assert "for model" not in bare
    (tmp_path / "bare.sh").write_text(bare)
    assert subprocess.run(["sh", "-n", str(tmp_path / "bare.sh")]).returncode == 0


def test_install_script_refuses_another_python(tmp_path: Path):
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "install.sh").write_text(install_script("0.1.0", "2.7", []))
    run = subprocess.run(
        ["sh", str(kit / "install.sh"), str(tmp_path / "venv")],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
    )
    assert run.returncode == 2 and "for Python 2.7" in run.stderr
    assert not (tmp_path / "venv").exists()


# -- which models travel -----------------------------------------------------------------


def test_an_adapter_brings_its_base_first_and_ships_inside_the_wheel():
    adapter = get_entry(carry.TRAINED_ADAPTER)
    assert carry.default_names() == [default_entry().name, adapter.name]
    chosen = carry.choose([adapter.name])
    assert [e.name for e in chosen] == [adapter.base, adapter.name]
    assert carry.ships_in_wheel(adapter) and not carry.ships_in_wheel(chosen[0])


def test_a_users_own_catalogue_entry_cannot_travel(tmp_path: Path):
    own = tmp_path / "own.gguf"
    own.write_bytes(b"GGUF" + b"\0" * 32)
    add_local(own, "my-judge")
    with pytest.raises(KitError, match="own catalogue entry"):
        carry.choose(["my-judge"])


# -- a whole kit, pip stood in for --------------------------------------------------------


@pytest.fixture
def fake_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """pip replaced: `wheel` writes anvil-local's wheel, `download` a dependency's; the
    default model's file is a stand-in. Returns the pip calls."""
    calls: list[list[str]] = []

    def pip(args, doing, env=None):
        calls.append(list(args))
        if args[0] == "wheel":
            out = Path(args[args.index("-w") + 1])
            out.mkdir(parents=True, exist_ok=True)
            (out / "anvil_local-0.1.0-py3-none-any.whl").write_bytes(b"anvil wheel")
        elif args[0] == "download":
            dest = Path(args[args.index("-d") + 1])
            (dest / "numpy-2.3.0-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"numpy")

    model = tmp_path / "stand-in.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)
    monkeypatch.setattr(kit_wheels, "pip", pip)
    monkeypatch.setattr(carry, "ensure_model", lambda entry: model)
    return calls


def test_a_kit_holds_wheels_models_install_script_and_a_manifest_that_verifies(
    tmp_path: Path, fake_pip: list[list[str]]
):
    given = llama_wheel(tmp_path)
    kit = write_kit(tmp_path / "kit", KitRequest(llama_wheel=given)).path
    files = sorted(verify_kit(kit)["files"])
    assert {
        "install.sh",
        "verify_kit.py",
        "wheels/anvil_local-0.1.0-py3-none-any.whl",
        f"wheels/{LLAMA_WHEEL}",
        "wheels/numpy-2.3.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        f"models/{default_entry().file}",
        "examples/meeting_summaries.jsonl",
    } <= set(files)
    assert not any(name.endswith(".lora.gguf") for name in files)  # inside the wheel
    download = next(c for c in fake_pip if c[0] == "download")
    assert "--only-binary=:all:" in download
    assert download[-2:] == [
        str(kit / "wheels" / "anvil_local-0.1.0-py3-none-any.whl"),
        str(kit / "wheels" / LLAMA_WHEEL),
    ]  # anvil-local's wheel as built, so pip resolves its core dependencies, no extras
    about = json.loads((kit / "manifest.json").read_text())
    assert (about["anvil_local"], about["llama_cpp_python"], about["llama_build"]) == (
        "0.1.0", "0.3.36", "native",
    )  # fmt: skip
    assert [m["name"] for m in about["models"]] == [default_entry().name, carry.TRAINED_ADAPTER]
    assert all(m["licence"] for m in about["models"])
    assert f"models/{default_entry().file}" in (kit / "install.sh").read_text()


def test_bundle_cli_lists_the_kit_with_sizes_and_packs_a_tar(tmp_path: Path, fake_pip):
    given = llama_wheel(tmp_path)
    result = CliRunner().invoke(
        main, ["bundle", str(tmp_path / "kit"), "--llama-wheel", str(given), "--tar"]
    )
    assert result.exit_code == 0, result.output
    assert f"wheels/{LLAMA_WHEEL}" in result.output and " kB" in result.output
    assert not (tmp_path / "kit").exists()
    shutil.unpack_archive(tmp_path / "kit.tar", tmp_path / "out")
    assert verify_kit(tmp_path / "out" / "kit")["llama_build"] == "native"


def test_a_kit_goes_into_a_new_or_empty_folder_only(tmp_path: Path, fake_pip):
    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "old.whl").write_bytes(b"stale")
    given = llama_wheel(tmp_path)
    result = CliRunner().invoke(
        main, ["bundle", str(tmp_path / "kit"), "--llama-wheel", str(given)]
    )
    assert result.exit_code == 2 and "not an empty folder" in result.output
    assert fake_pip == []


def test_a_failing_pip_step_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(
        subprocess, "run",
        lambda *a, **k: subprocess.CompletedProcess(a, 1, "", "noise\nERROR: No matching distribution found for x\n"),
    )  # fmt: skip
    with pytest.raises(
        KitError, match=r"^fetching x failed: No matching distribution found for x$"
    ):
        kit_wheels.pip(["download", "x"], "fetching x")


def test_a_step_that_fails_leaves_no_half_written_kit(
    tmp_path: Path, fake_pip, monkeypatch: pytest.MonkeyPatch
):
    def no_index(dest, wheels, target):
        raise KitError("fetching the dependencies for Python 3.11 failed: no index")

    monkeypatch.setattr(kit_wheels, "dependencies", no_index)
    given = llama_wheel(tmp_path)
    result = CliRunner().invoke(
        main, ["bundle", str(tmp_path / "kit"), "--llama-wheel", str(given)]
    )
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "Error: fetching the dependencies for Python 3.11 failed: no index"
    )
    assert not (tmp_path / "kit").exists()


# -- which variant a portable build loads (`anvil doctor`) --------------------------------


def test_a_portable_build_names_its_variants_and_a_native_one_none(tmp_path: Path):
    from anvil_local.bundle import variant

    assert variant.variant_name("/x/llama_cpp/lib/libggml-cpu-haswell.so") == "haswell"
    assert variant.built_variants(tmp_path) == []  # native: libggml-cpu.so alone
    (tmp_path / "libggml-cpu.so").write_bytes(b"")
    for name in ("x64", "haswell", "icelake"):
        (tmp_path / f"libggml-cpu-{name}.so").write_bytes(b"")
    assert variant.built_variants(tmp_path) == ["haswell", "icelake", "x64"]
    assert variant.loaded_variant(tmp_path) is None  # these load nothing: no variant, no crash


def test_doctor_names_the_variant_chosen_and_flags_none(tmp_path: Path, monkeypatch):
    from anvil_local import doctor
    from anvil_local.bundle import variant
    from anvil_local.judge import native

    (tmp_path / "lib").mkdir()
    for name in ("x64", "haswell"):
        (tmp_path / "lib" / f"libggml-cpu-{name}.so").write_bytes(b"")
    monkeypatch.setattr(native, "llama_cpp_dir", lambda: tmp_path)
    monkeypatch.setattr(variant, "loaded_variant", lambda lib: "haswell")
    (found,) = doctor._variant()
    assert (found.label, found.value, found.problem) == (
        "cpu variant", "haswell (chosen at load, of 2 built: haswell, x64)", None,
    )  # fmt: skip
    monkeypatch.setattr(variant, "loaded_variant", lambda lib: None)
    (found,) = doctor._variant()
    assert found.problem and found.value.startswith("none loaded")


def test_a_given_wheel_says_whether_it_is_portable(tmp_path: Path, caplog):
    native = llama_wheel(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert llama.given_wheel(native, tmp_path / "a")[1] == "native"
    assert "is a native build" in caplog.text
    (tmp_path / "p").mkdir()
    portable = llama_wheel(tmp_path / "p", ("x64", "haswell"))
    assert llama.given_wheel(portable, tmp_path / "b")[1] == "portable"
    broken = tmp_path / "c" / LLAMA_WHEEL
    broken.parent.mkdir()
    broken.write_bytes(b"not a zip")
    with pytest.raises(KitError, match="not a wheel"):
        llama.given_wheel(broken, tmp_path / "d")


def test_the_variants_load_into_the_ggml_copy_libllama_links(tmp_path: Path):
    """A wheel holds copies of libggml.so, libggml.so.0 and libggml.so.0.x: libllama links
    the soname copy, so the variants must register there (loading libggml.so instead gave
    'no backends are loaded' on a real portable build)."""
    for name in ["libggml.so", "libggml.so.0", "libggml.so.0.25.3", "libggml-cpu-x64.so"]:
        (tmp_path / name).write_bytes(b"")
    opened: list[str] = []

    class Function:
        argtypes = restype = None

        def __call__(self, *args: Any) -> None:
            opened.append(args[0].decode() if isinstance(args[0], bytes) else "log")

    class Library:
        ggml_backend_load_all_from_path = Function()
        ggml_log_set = Function()

    class FakeCtypes:
        c_char_p = c_int = c_void_p = object()

        def CDLL(self, path: str) -> Library:
            opened.append(path)
            return Library()

        def CFUNCTYPE(self, *types: Any) -> Any:
            return lambda *fn: "callback"

    exec(llama._LOAD_BACKENDS, {"ctypes": FakeCtypes(), "_base_path": tmp_path})
    # quiet while the variants load, the default logger after
    assert opened == [str(tmp_path / "libggml.so.0"), "log", str(tmp_path), "log"]
