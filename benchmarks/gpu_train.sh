#!/usr/bin/env bash
# The faithfulness adapter's training on a GPU, when a machine with one is lent: the same
# commands as on the CPU (`docs/training.md`), with torch on CUDA. The data file must be the
# one the committed run was trained on (its sha256 is checked on --resume).
#
# Run from the repository root, in the project's virtualenv with the train extra installed
# and a CUDA build of torch (`pip install torch==2.13.0` on a GPU host takes one):
#   SOURCES=/path/to/checkouts [RUN=benchmarks/training/faithful] benchmarks/gpu_train.sh [MINUTES]
# It rebuilds the training rows, resumes the committed run for MINUTES (default 20) on the GPU,
# converts the adapter to GGUF and prints its sha256. Exit status: the commands'.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python}
SOURCES=${SOURCES:?set SOURCES to the folder of source checkouts (docs/training.md)}
MINUTES=${1:-20}
DATA=${DATA:-build/train/faithful.jsonl}
RUN=${RUN:-benchmarks/training/faithful-lean}  # the shipped run (its targets are in its state)

"$PYTHON" -c "import torch; assert torch.cuda.is_available(), 'torch sees no GPU'; print('GPU:', torch.cuda.get_device_name(0))"
anvil train data --sources "$SOURCES" --out "$DATA" --exclude benchmarks/data/eval_ngrams.txt
anvil train lora --data "$DATA" --out "$RUN" --resume --max-minutes "$MINUTES" --device cuda
anvil train convert --run "$RUN" --out /tmp/smollm2-135m-faithful.lora.gguf
"$PYTHON" benchmarks/loss_curve.py "$RUN"
