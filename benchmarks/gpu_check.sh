#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU and the CUDA toolkit (nvcc, nvidia-smi):
#
#   1. builds llama-cpp-python (the installed version) with CUDA for this GPU's architecture
#      only, so the build fits in a few minutes on the machine's cores; it goes to
#      build/gpu-llama-cpp and is put first on PYTHONPATH, the CPU install stays as it is;
#   2. runs the real-model golden tests (and the judge primitives) with --n-gpu-layers -1:
#      a GPU is a kernel family of its own, held to every CPU golden file at the
#      cross-family tolerance, verdicts exact;
#   3. prints prompt tokens/s of the default judge on the GPU (the CUDA build, every layer
#      offloaded) against the CPU (the CPU build), with the probe `anvil doctor` uses.
#
# Run from the repository root, in the project's virtualenv (`pip install -e .` done):
#   benchmarks/gpu_check.sh
# Offline: LLAMA_CPP_SDIST=/path/llama_cpp_python-X.Y.Z.tar.gz builds from that file, and
# PIP_FIND_LINKS=/path/wheelhouse (with scikit-build-core, cmake, ninja) serves the build's
# own requirements; the default judge must already be pulled (`anvil models pull`).
# Exit status: the tests' (0 = the GPU gives the golden verdicts).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python}
TARGET=build/gpu-llama-cpp
version=$("$PYTHON" -c "from importlib.metadata import version; print(version('llama-cpp-python'))")
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
cores=$(nproc)
echo "GPU: $gpu (compute capability ${arch:0:-1}.${arch: -1}); llama-cpp-python $version; $cores cores"

if [[ ! -f "$TARGET/.built-$version-sm$arch" ]]; then
  rm -rf "$TARGET"
  source=${LLAMA_CPP_SDIST:-llama-cpp-python==$version}
  start=$(date +%s)
  CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=$arch \
-DCMAKE_PROJECT_INCLUDE=$PWD/anvil_local/judge/llama_build.cmake" \
  CMAKE_BUILD_PARALLEL_LEVEL=$cores \
    "$PYTHON" -m pip install --quiet --no-deps --no-cache-dir --target "$TARGET" "$source"
  touch "$TARGET/.built-$version-sm$arch"
  echo "built llama-cpp-python $version with CUDA for sm_$arch in $(( $(date +%s) - start )) s"
fi

status=0
PYTHONPATH="$PWD/$TARGET${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m pytest -q -p no:cacheprovider \
  tests/test_model_golden.py tests/test_model_judge.py --n-gpu-layers -1 || status=$?

speed() {  # speed N_GPU_LAYERS: prompt tokens/s of the default judge (3 probes, best)
  "$PYTHON" - "$1" <<'EOF'
import sys
from pathlib import Path

from anvil_local.judge.native import probe
from anvil_local.judge.settings import default_threads
from anvil_local.models.catalogue import default_entry
from anvil_local.models.store import ensure_model

layers = int(sys.argv[1])
path = ensure_model(default_entry())
result = probe(Path(path), default_threads(), n_gpu_layers=layers, throughput=True)
print(f"{result.prompt_tokens_per_s:.0f} {result.generated_tokens_per_s:.0f}")
EOF
}
read -r gpu_prompt gpu_gen < <(PYTHONPATH="$PWD/$TARGET${PYTHONPATH:+:$PYTHONPATH}" speed -1)
read -r cpu_prompt cpu_gen < <(speed 0)
echo "default judge, 256-token prompt then 32 generated tokens (best of 3):"
echo "  GPU ($gpu, every layer offloaded): $gpu_prompt prompt tokens/s, $gpu_gen generated tokens/s"
echo "  CPU (all $cores cores, the CPU build): $cpu_prompt prompt tokens/s, $cpu_gen generated tokens/s"
"$PYTHON" -c "print(f'  GPU / CPU prompt speed: {$gpu_prompt / max($cpu_prompt, 1):.1f}x')"
exit "$status"
