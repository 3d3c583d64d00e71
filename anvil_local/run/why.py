"""One line saying why a result came out as it did, for a table cell: the error, else what
its trace shows (the DAG's verdicts with their probabilities, the G-Eval's most likely
score, the likelihood's weakest token), exact, then the judge's reason, generated, as far as
room allows. `anvil compare` lists flipped cases with it."""

from __future__ import annotations

from typing import Any

from anvil_local.run.records import ResultLine

LIMIT = 160


def why(line: ResultLine, limit: int = LIMIT) -> str:
    result = line.result
    if result.error is not None:
        text = f"error: {result.error}"
    else:
        parts = [trace_gist(result.trace.to_dict()), result.reason or ""]
        text = " — ".join(part for part in parts if part)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def trace_gist(trace: dict[str, Any]) -> str:
    kind = trace.get("type")
    if kind == "dag":
        return _dag(trace)
    if kind == "geval":
        return _geval(trace)
    if kind == "likelihood":
        return _likelihood(trace)
    return ""


def _dag(trace: dict[str, Any]) -> str:
    parts = []
    for step in trace.get("path") or []:
        if "verdict" not in step:
            continue
        probability = (step.get("probabilities") or {}).get(step["verdict"])
        shown = f" ({probability:.2f})" if isinstance(probability, float | int) else ""
        parts.append(f"{step.get('node')}: {step['verdict']}{shown}")
    leaves = trace.get("leaves") or []
    if leaves:
        parts.append("score " + ", ".join(f"{leaf.get('score', 0):.2f}" for leaf in leaves))
    if trace.get("expected_score") is not None:
        parts.append(f"expected {trace['expected_score']:.2f}")
    return " → ".join(parts)


def _geval(trace: dict[str, Any]) -> str:
    if trace.get("verdict") is not None:
        probability = (trace.get("probabilities") or {}).get(trace["verdict"])
        shown = f" ({probability:.2f})" if isinstance(probability, float | int) else ""
        return f"verdict {trace['verdict']}{shown}"
    distribution = trace.get("distribution") or {}
    top = trace.get("most_likely")
    lo, hi = (trace.get("score_range") or [None, None])[:2]
    parts = []
    if top is not None:
        probability = distribution.get(str(top))
        shown = f" (p {probability:.2f})" if isinstance(probability, float | int) else ""
        parts.append(f"most likely {top} of {lo}-{hi}{shown}")
    if trace.get("weighted") is not None:
        parts.append(f"weighted {trace['weighted']:.2f}")
    return "; ".join(parts)


def _likelihood(trace: dict[str, Any]) -> str:
    tokens = trace.get("tokens") or []
    index = trace.get("weakest_token")
    if isinstance(index, int) and 0 <= index < len(tokens):
        token, logprob = tokens[index]
        return f"weakest token {token.strip()!r} (log p {logprob:.2f})"
    if tokens:
        token, logprob = min(tokens, key=lambda pair: pair[1])
        return f"mean log p {trace.get('conditional', 0):.2f}; least likely {token.strip()!r}"
    return ""
