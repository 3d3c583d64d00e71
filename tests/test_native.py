"""The native library against this CPU: no AMX in the build, crashes caught in a child process
and reported as one line, a passing check cached."""

import json
import re
import signal
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.errors import NativeCrash
from anvil_local.judge import native

ROOT = Path(__file__).resolve().parent.parent
SIGILL_CHILD = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGILL)"]

SYSTEM_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "AVX512 = 1 | AVX512_VNNI = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)


def test_the_loaded_native_library_holds_no_amx_tile_instructions():
    libraries = native.native_libraries()
    names = [p.name for p in libraries]
    assert any("llama" in n for n in names) and any("ggml" in n for n in names), names
    counts = {p.name: native.amx_instruction_count(p) for p in libraries}
    assert None not in counts.values(), "objdump is needed for this check (binutils)"
    assert sum(counts.values()) == 0, f"AMX tile instructions found: {counts}"


def test_the_amx_counter_finds_tile_instructions(tmp_path: Path):
    """The counter itself can fail: a tiny object holding tilezero is counted."""
    import shutil
    import subprocess

    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no C compiler")
    source = tmp_path / "amx.c"
    source.write_text('void f(void) { __asm__ volatile ("tilezero %tmm0\\n tilerelease"); }\n')
    obj = tmp_path / "amx.o"
    subprocess.run([gcc, "-c", "-mamx-tile", str(source), "-o", str(obj)], check=True)
    assert native.amx_instruction_count(obj) == 2


def test_a_child_killed_by_sigill_is_reported_as_such(tmp_path: Path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(NativeCrash) as caught:
        native.probe(model, threads=1, command=SIGILL_CHILD)
    message = str(caught.value)
    assert "SIGILL (illegal instruction)" in message
    assert "\n" not in message
    assert "CMAKE_PROJECT_INCLUDE=" in message and str(native.BUILD_FILE) in message
    assert "--force-reinstall --no-cache-dir" in message


def test_other_signals_are_named_too(tmp_path: Path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    child = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
    with pytest.raises(NativeCrash, match=r"SIGSEGV \(segmentation fault\)"):
        native.probe(model, threads=1, command=child)


def test_a_failing_child_that_did_not_crash_is_not_a_verdict(tmp_path: Path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    child = [sys.executable, "-c", "raise SystemExit('cannot load')"]
    with pytest.raises(native.NativeProbeFailed, match="cannot load"):
        native.probe(model, threads=1, command=child)


def test_compiled_features_and_what_this_cpu_lacks():
    assert native.compiled_features(SYSTEM_INFO)[:3] == ["SSE3", "SSSE3", "AVX"]
    assert "AMX_INT8" in native.compiled_features(SYSTEM_INFO)
    flags = {"pni", "ssse3", "avx", "avx2", "f16c", "fma", "bmi2", "avx512f", "avx512_vnni"}
    assert native.missing_features(SYSTEM_INFO, flags) == ["AMX_INT8"]
    assert native.missing_features(SYSTEM_INFO, flags | {"amx_int8"}) == []
    assert native.missing_features(SYSTEM_INFO, set()) == []  # unknown flags: claim nothing


def test_the_build_file_is_what_the_readme_installs_with():
    readme = (ROOT / "README.md").read_text()
    relative = native.BUILD_FILE.relative_to(ROOT)
    assert f'CMAKE_ARGS="-DCMAKE_PROJECT_INCLUDE=$PWD/{relative}" pip install' in readme
    assert "-mno-amx-tile" in native.BUILD_FILE.read_text()


def _sigill_probe(monkeypatch):
    real = native.probe

    def crashing(model_path, threads, n_gpu_layers=0, throughput=False, command=None):
        return real(model_path, threads, n_gpu_layers, throughput, command=SIGILL_CHILD)

    monkeypatch.setattr(native, "probe", crashing)


@pytest.mark.model
def test_a_passing_check_is_cached_and_not_run_again(default_model_path: Path, monkeypatch):
    native.ensure_native_ok(default_model_path, threads=1)
    verdicts = list((Path(native._verdict_path("x")).parent).glob("*.json"))
    assert len(verdicts) == 1
    assert json.loads(verdicts[0].read_text())["ok"] is True
    _sigill_probe(monkeypatch)  # a second check would now crash: it must not run
    native.ensure_native_ok(default_model_path, threads=1)


@pytest.mark.model
def test_a_crash_is_not_cached(default_model_path: Path, monkeypatch):
    _sigill_probe(monkeypatch)
    for _ in range(2):
        with pytest.raises(NativeCrash):
            native.ensure_native_ok(default_model_path, threads=1)
    assert not list(Path(native._verdict_path("x")).parent.glob("*.json"))


@pytest.mark.model
def test_eval_reports_a_native_crash_as_one_line_and_exit_2(
    default_model_path: Path, tmp_path: Path, monkeypatch
):
    from anvil_local.judge import pool as pool_module

    # no judge loaded earlier in this process
    monkeypatch.setattr(pool_module, "_PROCESS_POOL", pool_module.JudgePool())
    _sigill_probe(monkeypatch)
    out = tmp_path / "r.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--metric",
            str(ROOT / "examples" / "headings_llm.toml"),
            "--data",
            str(ROOT / "examples" / "meeting_summaries.jsonl"),
            "--model",
            str(default_model_path),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: llama.cpp crashed with SIGILL (illegal instruction)")
    assert "pip install --force-reinstall" in line
    assert "Traceback" not in result.output


@pytest.mark.model
def test_doctor_reports_a_usable_install(default_model_path: Path, real_data_dir: Path):
    result = CliRunner().invoke(main, ["doctor", "--threads", "1"])
    assert result.exit_code == 0, result.output
    text = result.output
    for part in ("anvil-local", "llama-cpp-python", "outlines", "python", "llama.cpp", "CPU :"):
        assert part in text, part
    assert re.search(r"^AMX instructions +none$", text, re.M)
    assert re.search(r"^test decode +OK \(smollm2-135m-instruct\)$", text, re.M)
    speed = re.search(r"^throughput +(\d+) prompt tokens/s, (\d+) generated tokens/s", text, re.M)
    assert speed and int(speed[1]) > 0 and int(speed[2]) > 0
    assert re.search(r"^model smollm2-135m-instruct +sha256 OK", text, re.M)
    assert re.search(r"^status +OK$", text, re.M)


@pytest.mark.model
def test_doctor_says_not_usable_when_the_test_decode_crashes(real_data_dir: Path, monkeypatch):
    _sigill_probe(monkeypatch)
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 1, result.output
    assert re.search(r"^test decode +crashed$", result.output, re.M)
    assert re.search(r"^ +problem: llama.cpp crashed with SIGILL", result.output, re.M)
    assert "NOT USABLE" in result.output


def test_sigill_is_a_known_signal_name():
    assert native.describe_signal(signal.SIGILL) == "SIGILL (illegal instruction)"
