#!/usr/bin/env bash
# A remote judge on a GPU, for a machine with an NVIDIA GPU and the CUDA toolkit:
#
#   1. builds llama-cpp-python (the installed version) with CUDA for this GPU's architecture
#      into build/gpu-llama-cpp, as benchmarks/gpu_check.sh does (shared: built once);
#   2. starts `anvil serve --n-gpu-layers -1` on a loopback port with that build first on
#      PYTHONPATH, and the same server on the CPU build beside it;
#   3. runs the README's main job and the four SummEval G-Eval files (2 articles x 8
#      summaries) against each server with `anvil eval --judge-url`, and prints seconds per
#      case and the largest difference of any score between the two (a GPU is a kernel family
#      of its own: close, not bit-equal).
#
# Run from the repository root, in the project's virtualenv (`pip install -e '.[serve,remote]'`):
#   benchmarks/gpu_serve.sh
# The default judge must be pulled (`anvil models pull smollm2-135m-instruct`); offline, set
# LLAMA_CPP_SDIST and PIP_FIND_LINKS as for gpu_check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python}
TARGET=build/gpu-llama-cpp
MODEL=${MODEL:-smollm2-135m-instruct}
version=$("$PYTHON" -c "from importlib.metadata import version; print(version('llama-cpp-python'))")
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
cores=$(nproc)
echo "GPU: $gpu; llama-cpp-python $version; $cores cores"

if [[ ! -f "$TARGET/.built-$version-sm$arch" ]]; then
  rm -rf "$TARGET"
  source=${LLAMA_CPP_SDIST:-llama-cpp-python==$version}
  CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=$arch \
-DCMAKE_PROJECT_INCLUDE=$PWD/anvil_local/judge/llama_build.cmake" \
  CMAKE_BUILD_PARALLEL_LEVEL=$cores \
    "$PYTHON" -m pip install --quiet --no-deps --no-cache-dir --target "$TARGET" "$source"
  touch "$TARGET/.built-$version-sm$arch"
fi

work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

serve() {  # serve NAME [PYTHONPATH] [LAYERS]: start a server, wait for its ready line, print its URL
  local name=$1 path=$2 layers=$3
  PYTHONPATH="$path" "$PYTHON" -m anvil_local.cli serve --model "$MODEL" --port 0 \
    --n-gpu-layers "$layers" > "$work/$name.out" 2> "$work/$name.err" &
  pids+=($!)
  for _ in $(seq 600); do
    grep -q "ready at" "$work/$name.out" 2>/dev/null && break
    sleep 0.5
  done
  grep -o 'http://[^ ]*' "$work/$name.out" | head -n 1
}

gpu_url=$(serve gpu "$PWD/$TARGET${PYTHONPATH:+:$PYTHONPATH}" -1)
cpu_url=$(serve cpu "${PYTHONPATH:-}" 0)
echo "GPU server: $gpu_url; CPU server: $cpu_url"

"$PYTHON" - "$gpu_url" "$cpu_url" "$MODEL" <<'PY'
import sys
import time

sys.path.insert(0, "benchmarks")
from harness import GEVAL_NAMES, HEADINGS_LLM, ROOT, meeting_cases, summeval_cases

from anvil_local.run.evaluate import evaluate
from anvil_local.spec import load_metrics

gpu, cpu, model = sys.argv[1:]
workloads = [
    ("README main job", meeting_cases(), load_metrics(ROOT / "examples" / "headings.toml") + load_metrics(HEADINGS_LLM)),
    ("four SummEval G-Eval files", summeval_cases(ROOT / "benchmarks" / "data" / "summeval.jsonl", 2, 8),
     [m for n in GEVAL_NAMES for m in load_metrics(ROOT / "examples" / "geval" / f"{n}.toml")]),
]
print("| workload | cases | s/case GPU | s/case CPU | x faster | max score difference |")
print("|---|---|---|---|---|---|")
for name, cases, metrics in workloads:
    scores, seconds = {}, {}
    for where, url in (("gpu", gpu), ("cpu", cpu)):
        start = time.perf_counter()
        outcome = evaluate(cases, metrics, model=f"{url}#{model}", use_cache=False, include_reason=False)
        seconds[where] = (time.perf_counter() - start) / len(cases)
        scores[where] = {(x.case_id, x.metric): x.result.score for x in outcome.lines}
    worst = max(abs(scores["gpu"][k] - scores["cpu"][k]) for k in scores["cpu"])
    print(f"| {name} | {len(cases)} | {seconds['gpu']:.3f} | {seconds['cpu']:.3f} | "
          f"{seconds['cpu'] / seconds['gpu']:.1f} | {worst:.2e} |")
PY
