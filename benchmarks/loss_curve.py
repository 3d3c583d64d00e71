"""The loss curve of a training run (`anvil train lora --out DIR`) as a PNG: the training loss
per step (and its running mean over 25 steps) and the held-out validation loss.

    python benchmarks/loss_curve.py benchmarks/training/faithful
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="the run folder (loss.jsonl, state.json)")
    p.add_argument("--out", type=Path, help="the PNG (default: RUN/loss.png)")
    args = p.parse_args()
    points = [json.loads(line) for line in (args.run / "loss.jsonl").open()]
    state = json.loads((args.run / "state.json").read_text())
    steps = np.array([p["step"] for p in points])
    loss = np.array([p["loss"] for p in points])
    window = 25
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    val = state.get("history", [])
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    ax.plot(steps, loss, color="#bbbbbb", linewidth=0.6, label="training loss (8 rows a step)")
    ax.plot(steps[window - 1 :], smooth, color="#1f77b4", label=f"running mean of {window} steps")
    if val:
        ax.plot(
            [v["step"] for v in val],
            [v["val_loss"] for v in val],
            "o-",
            color="#d62728",
            label="validation loss (held-out documents)",
        )
    ax.axhline(np.log(2), color="#888888", linestyle=":", label="chance (ln 2)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy of the right verdict")
    config = state["config"]
    ax.set_title(
        f"LoRA r={config['rank']} on SmolLM2-135M Q4_1: {state['step']} steps, "
        f"{state['rows_done']} rows, {state['seconds'] / 3600:.2f} h on 2 CPU cores"
    )
    ax.legend(loc="upper right", fontsize=8)
    ax.set_ylim(0, max(1.2, float(loss.max()) * 1.05) if len(loss) else 1.2)
    fig.tight_layout()
    out = args.out or args.run / "loss.png"
    fig.savefig(out)
    print(out)


if __name__ == "__main__":
    main()
