"""The kit's llama-cpp-python wheel: one that runs on whichever x86-64 CPU it lands on.

The package index carries llama-cpp-python as source only, and the README's build is tied to
the build CPU (`GGML_NATIVE`). A kit builds it portable instead: llama.cpp compiles its CPU
backend once per instruction-set level (`GGML_CPU_ALL_VARIANTS`, x64 to AVX-512 VNNI/BF16)
as loadable modules (`GGML_BACKEND_DL`), and the best one for the host is picked when the
library loads. AMX stays out, as in the project's native build (some VMs advertise AMX and
fault on it): the `sapphirerapids` variant, the only one with AMX, is not built, and the
project's CMake include adds `-mno-amx-*` to the rest.

Two things the source distribution does not do for such a build are patched into it before
pip builds the wheel (llama-cpp-python issue 2069): the variant modules are installed next
to the other libraries (`CMAKE_INSTALL_BINDIR`), and the package loads them from there at
import (`ggml_backend_load_all_from_path`); llama.cpp alone would look beside the Python
executable only. The version gets a `+portable` label, so `anvil doctor` shows which build
it runs. Compiling a dozen variants takes a long time on a small machine: `--llama-wheel`
reuses one built before.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sysconfig
import tarfile
import tempfile
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from anvil_local.bundle.wheels import Target, pip
from anvil_local.errors import KitError
from anvil_local.judge.native import BUILD_FILE

log = logging.getLogger(__name__)

DISTRIBUTION = "llama-cpp-python"
#: The local version label of a portable build.
LABEL = "portable"


def cmake_args() -> list[str]:
    """CMAKE_ARGS of the portable build."""
    return [
        "-DGGML_BACKEND_DL=ON",
        "-DGGML_CPU_ALL_VARIANTS=ON",
        "-DGGML_NATIVE=OFF",
        "-DCMAKE_INSTALL_BINDIR=llama_cpp/lib",
        f"-DCMAKE_PROJECT_INCLUDE={BUILD_FILE}",
    ]


_AMX_VARIANT = re.compile(
    r"^(\s*)(ggml_add_cpu_backend_variant\(\s*\S+[^)\n]*\bAMX_\w+[^)\n]*\))", re.M
)


def drop_amx_variants(cmake: str) -> str:
    """ggml's CMakeLists with every CPU variant that uses AMX commented out; KitError when
    there is none (the file changed: the build would need a fresh look)."""
    patched, count = _AMX_VARIANT.subn(r"\1# \2  # left out by anvil-local: no AMX", cmake)
    if count == 0:
        raise KitError("llama.cpp's ggml/src/CMakeLists.txt names no AMX CPU variant to leave out")
    return patched


_LIB_LOADED = re.compile(r"^_lib = load_shared_library\(_lib_base_name, _base_path\)\n", re.M)

_LOAD_BACKENDS = r"""
# Added by anvil-local's portable build: load the CPU backend variant that suits this host
# from this package's lib folder (llama.cpp alone looks beside the executable).
# A wheel holds copies, not links: libllama links libggml by its soname (libggml.so.0), and
# only that copy's registry counts.
def _load_cpu_variants(path):
    if not list(path.glob("libggml-cpu-*.so")):
        return
    import re
    sonames = [p for p in path.glob("libggml.so.*") if re.fullmatch(r"libggml\.so\.\d+", p.name)]
    ggml = ctypes.CDLL(str(sonames[0] if sonames else path / "libggml.so"))
    ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load_all_from_path.restype = None
    # quiet while loading (llama.cpp says "loaded CPU backend" on stderr), then as before
    logger = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
    quiet = logger(lambda level, text, data: None)
    ggml.ggml_log_set.argtypes = [logger, ctypes.c_void_p]
    ggml.ggml_log_set.restype = None
    ggml.ggml_log_set(quiet, None)
    ggml.ggml_backend_load_all_from_path(str(path).encode())
    ggml.ggml_log_set(logger(), None)


_load_cpu_variants(_base_path)
"""


def load_variants_at_import(source: str) -> str:
    """llama_cpp/llama_cpp.py with the variant loading added after the library loads."""
    patched, count = _LIB_LOADED.subn(lambda m: m.group(0) + _LOAD_BACKENDS, source, count=1)
    if count != 1:
        raise KitError("llama_cpp/llama_cpp.py no longer loads its library where expected")
    return patched


def label_version(init: str) -> str:
    """llama_cpp/__init__.py with `+portable` added to `__version__`."""
    patched, count = re.subn(
        r'^__version__ = "([^"+]+)"', rf'__version__ = "\1+{LABEL}"', init, flags=re.M
    )
    if count != 1:
        raise KitError("llama_cpp/__init__.py holds no __version__ to label")
    return patched


def patch_source(root: Path) -> None:
    """Apply the three patches to an unpacked llama-cpp-python source distribution."""
    edits = {
        root / "vendor" / "llama.cpp" / "ggml" / "src" / "CMakeLists.txt": drop_amx_variants,
        root / "llama_cpp" / "llama_cpp.py": load_variants_at_import,
        root / "llama_cpp" / "__init__.py": label_version,
    }
    for path, edit in edits.items():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise KitError(f"{path}: cannot read the llama-cpp-python source: {exc}") from exc
        path.write_text(edit(text), encoding="utf-8")


def installed_version() -> str:
    """The llama-cpp-python version this install runs (without a local label)."""
    try:
        return version(DISTRIBUTION).split("+")[0]
    except PackageNotFoundError as exc:
        raise KitError(
            "llama-cpp-python is not installed here, so there is no version to build; "
            "give --llama-wheel"
        ) from exc


def check_buildable(target: Target) -> None:
    """A wheel built here runs on this machine's architecture only: refuse a target
    platform of another one (its wheel must be built there and given as --llama-wheel)."""
    here = sysconfig.get_platform().replace("-", "_").replace(".", "_")  # linux_x86_64
    arch = here.split("_", 1)[1] if "_" in here else here
    other = [p for p in target.platforms if not p.endswith(arch)]
    if other:
        raise KitError(
            f"the llama-cpp-python wheel is built for this machine ({here}), not for "
            f"{', '.join(other)}: build it there and give it as --llama-wheel"
        )


def build_portable(dest: Path, llama_version: str | None = None) -> Path:
    """Fetch llama-cpp-python's source distribution, patch it and build the portable wheel
    into `dest` (a compiler and CMake needed; many minutes)."""
    wanted = llama_version or installed_version()
    with tempfile.TemporaryDirectory(prefix="anvil-llama-") as tmp:
        work = Path(tmp)
        pip(
            ["download", "--no-deps", "--no-binary", ":all:", "-d", str(work),
             f"{DISTRIBUTION}=={wanted}"],
            f"fetching the {DISTRIBUTION} {wanted} source",
        )  # fmt: skip
        (archive,) = work.glob("llama_cpp_python-*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(work / "src", filter="data")
        (root,) = (work / "src").iterdir()
        patch_source(root)
        env = {**os.environ, "CMAKE_ARGS": " ".join(cmake_args())}
        log.warning(
            "building a portable %s %s (every CPU variant but AMX; this takes long)",
            DISTRIBUTION,
            wanted,
        )
        pip(["wheel", "--no-deps", "-w", str(work / "out"), str(root)], "building llama.cpp", env)
        (wheel,) = (work / "out").glob("llama_cpp_python-*.whl")
        dest.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(wheel, dest / wheel.name))


def given_wheel(path: Path, dest: Path) -> tuple[Path, str]:
    """A llama-cpp-python wheel built before (`--llama-wheel`), copied into `dest`, and
    what it is: "portable" when it holds CPU variants, else "native" (tied to CPUs like the
    one it was built on, which is said)."""
    if not path.is_file() or not path.name.startswith("llama_cpp_python-") or path.suffix != ".whl":
        raise KitError(f"--llama-wheel {path}: not a llama_cpp_python-*.whl file")
    try:
        with zipfile.ZipFile(path) as wheel:
            names = wheel.namelist()
    except zipfile.BadZipFile as exc:
        raise KitError(f"--llama-wheel {path}: not a wheel ({exc})") from exc
    portable = any(Path(n).name.startswith("libggml-cpu-") for n in names)
    if not portable:
        log.warning(
            "%s is a native build: it runs on CPUs with the instruction sets of the one it "
            "was built on; a portable one is built when --llama-wheel is not given",
            path.name,
        )
    dest.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(path, dest / path.name)), "portable" if portable else "native"
