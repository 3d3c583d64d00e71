"""The child side of the native check: load a model, decode a few tokens, print one JSON line.

Run as `python -m anvil_local.judge.canary '{"model": PATH, "threads": N, ...}'`. If llama.cpp
holds an instruction this CPU cannot run, this process is the one that dies.
"""

from __future__ import annotations

import json
import sys
import time

_TEXT = (
    "A judge model reads a document and a summary, then answers one short question about "
    "them. The question is answered by reading the probabilities of the allowed options. "
)


def _best_of(runs: int, fn) -> float:
    return min(fn() for _ in range(runs))


def main(argv: list[str]) -> int:
    args = json.loads(argv[0])
    import llama_cpp

    threads = int(args["threads"])
    llama = llama_cpp.Llama(
        model_path=args["model"],
        n_ctx=512,
        n_batch=512,
        n_ubatch=512,
        n_threads=threads,
        n_threads_batch=threads,
        n_gpu_layers=int(args.get("n_gpu_layers", 0)),
        logits_all=False,
        verbose=False,
    )
    tokens = llama.tokenize(_TEXT.encode(), add_bos=True, special=False)
    # a prompt batch, then single-token decodes: the two shapes every judge call uses
    llama.eval(tokens[:48])
    for token in tokens[48:50]:
        llama.eval([token])
    report = {
        "system_info": llama_cpp.llama_print_system_info().decode(errors="replace"),
        "llama_cpp_version": llama_cpp.__version__,
        "threads": threads,
        "n_params": int(llama_cpp.llama_model_n_params(llama.model)),
    }
    if args.get("throughput"):
        report.update(_throughput(llama, tokens))
    print(json.dumps(report), flush=True)
    return 0


def _throughput(llama, tokens: list[int]) -> dict:
    """Prompt tokens/s over a 256-token prompt and generated tokens/s over 32 greedy steps,
    each the best of 3 (the machines this runs on are shared and noisy)."""
    prompt = (tokens * (256 // len(tokens) + 1))[:256]

    def read_prompt() -> float:
        llama.reset()
        start = time.perf_counter()
        llama.eval(prompt)
        return time.perf_counter() - start

    def generate() -> float:
        llama.reset()
        llama.eval(prompt[:16])
        start = time.perf_counter()
        for _ in range(32):
            logits = llama.scores[llama.n_tokens - 1]
            llama.eval([int(logits.argmax())])
        return time.perf_counter() - start

    prompt_s = _best_of(3, read_prompt)
    gen_s = _best_of(3, generate)
    return {
        "prompt_tokens": len(prompt),
        "prompt_tokens_per_s": len(prompt) / prompt_s,
        "generated_tokens": 32,
        "generated_tokens_per_s": 32 / gen_s,
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
