"""What a llama.cpp build costs in speed: installs of llama-cpp-python side by side.

Each install is a Python interpreter (a venv) with its own llama-cpp-python build. The same
probe the doctor uses (`anvil_local/judge/canary.py`: a 256-token prompt and 32 generated
tokens, best of 3) runs in each, in turn, so all see the same machine load; the table gives
medians over rounds and each install's ratio to the first. An install whose probe dies is
shown with its signal.

    python benchmarks/native_build.py --install no-amx=.venv/bin/python \
        --install portable=/tmp/venv-portable/bin/python --install amx=/tmp/venv-amx/bin/python

Figures: benchmarks/results/native_build.json.
"""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
from pathlib import Path

from harness import ROOT, add_rounds, parser, write_figures

CANARY = ROOT / "anvil_local" / "judge" / "canary.py"
COLUMNS = ["install", "prompt tok/s", "generated tok/s", "ratio", "built for"]


def probe(python: str, model: Path, threads: int) -> dict:
    args = {"model": str(model), "threads": threads, "throughput": True}
    done = subprocess.run(
        [python, str(CANARY), json.dumps(args)], capture_output=True, text=True, check=False
    )
    if done.returncode < 0:
        return {"crash": signal.Signals(-done.returncode).name}
    if done.returncode != 0:
        raise SystemExit(f"{python}: probe failed ({done.returncode}): {done.stderr[-300:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = parser(
        __doc__.splitlines()[0], data=False, model_help="GGUF path (default: the default judge)"
    )
    p.add_argument("--install", action="append", required=True, metavar="NAME=PYTHON")
    p.add_argument("--threads", type=int, default=2)
    add_rounds(p, 3, "rounds of the probe in every install")
    args = p.parse_args()
    installs = [tuple(item.split("=", 1)) for item in args.install]
    if args.model is None:
        from anvil_local.models import ensure_model

        args.model = ensure_model()
    args.model = Path(args.model)
    runs: dict[str, list[dict]] = {name: [] for name, _ in installs}
    for _ in range(args.rounds):
        for name, python in installs:
            runs[name].append(probe(python, args.model, args.threads))
    print(f"model {args.model.name}, {args.threads} threads, {args.rounds} rounds (medians)")
    print(f"{'install':10} {'prompt tok/s':>13} {'generated tok/s':>16} {'ratio':>6}  built for")
    base = None
    rows = []
    for name, python in installs:
        crashes = [r["crash"] for r in runs[name] if "crash" in r]
        if crashes:
            print(f"{name:10} {'crashed with ' + crashes[0]:>37}  ({python})")
            rows.append([name, None, None, None, f"crashed with {crashes[0]}"])
            continue
        prompt = statistics.median(r["prompt_tokens_per_s"] for r in runs[name])
        gen = statistics.median(r["generated_tokens_per_s"] for r in runs[name])
        base = base or prompt
        info = runs[name][0]["system_info"]
        simd = "AVX-512" if "AVX512 = 1" in info else "AVX2" if "AVX2 = 1" in info else "SSE"
        amx = ", AMX" if "AMX_INT8 = 1" in info else ""
        print(f"{name:10} {prompt:13.1f} {gen:16.1f} {prompt / base:6.3f}  {simd}{amx}")
        rows.append([name, prompt, gen, prompt / base, f"{simd}{amx}"])
    write_figures(
        args,
        "native_build",
        f"The doctor's probe in each llama-cpp-python install, {args.threads} threads, medians "
        f"of {args.rounds} rounds",
        COLUMNS,
        rows,
        formats={"prompt tok/s": ".1f", "generated tok/s": ".1f", "ratio": ".3f"},
        units={"prompt tok/s": "tokens/s", "generated tok/s": "tokens/s"},
        notes=[f"{name}: {python}" for name, python in installs],
        models=[args.model],
        settings={"threads": args.threads, "rounds": args.rounds},
    )


if __name__ == "__main__":
    main()
