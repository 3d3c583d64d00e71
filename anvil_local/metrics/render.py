"""Human-readable traces (verbose_mode, `anvil explain`)."""

from __future__ import annotations

from typing import Any

from anvil_local.metrics.base import MetricResult

_BAR = 30


def _bar(p: float) -> str:
    return "#" * round(p * _BAR)


def _probs(probabilities: dict[str, float], chosen: Any = None) -> list[str]:
    width = max(len(str(k)) for k in probabilities)
    lines = []
    for option, p in probabilities.items():
        mark = "*" if str(option) == str(chosen) else " "
        lines.append(f"   {mark} {option!s:<{width}}  {p:6.3f}  {_bar(p)}")
    return lines


def render_result(result: MetricResult) -> str:
    """A metric result as an indented, readable block."""
    head = f"{result.metric}: "
    if result.error:
        return head + f"ERROR {result.error}"
    status = "PASS" if result.success else "FAIL"
    lines = [head + f"score {result.score:.3f} (threshold {result.threshold}) {status}"]
    trace = result.trace
    if trace.get("type") == "geval":
        lines += _render_geval(trace)
    elif trace.get("type") == "dag":
        lines += _render_dag(trace)
    if result.reason:
        lines.append(f"  reason: {result.reason}")
    u = result.usage
    lines.append(
        f"  tokens: {u.evaluated_tokens} evaluated of {u.prompt_tokens} prompt "
        f"({u.reused_tokens} reused), {u.calls} calls, {result.seconds:.2f} s"
    )
    return "\n".join(lines)


def _render_geval(trace: dict[str, Any]) -> list[str]:
    lines = ["  steps:"]
    lines += [f"   {i}. {s}" for i, s in enumerate(trace.get("steps", []), 1)]
    if "distribution" in trace:
        lo, hi = trace["score_range"]
        lines.append(f"  distribution over {lo}-{hi} (weighted {trace['weighted']:.3f}):")
        lines += _probs(trace["distribution"], trace.get("most_likely"))
    else:
        lines.append("  strict verdict:")
        lines += _probs(trace["probabilities"], trace.get("verdict"))
    return lines


def _render_dag(trace: dict[str, Any]) -> list[str]:
    lines = [f"  path (probability {trace['path_probability']:.3f}):"]
    for step in trace["path"]:
        if step["type"] == "task":
            lines.append(f"  - [{step['node']}] {step['output_label']}: {step['output']}")
        else:
            first = step["question"].split("\n", 1)[0]
            lines.append(f"  - [{step['node']}] {first} -> {step['verdict']}")
            lines += _probs(step["probabilities"], step["verdict"])
            if "decoded" in step:
                agree = "agrees" if step["decoded"] == step["verdict"] else "DIFFERS"
                lines.append(
                    f"     grammar-constrained greedy decode: {step['decoded']!r} ({agree})"
                )
    for leaf in trace["leaves"]:
        source = f" from {leaf['metric']['metric']}" if "metric" in leaf else ""
        lines.append(
            f"  = [{leaf['node']}] verdict {leaf['verdict']!r}: score {leaf['score']:.3f}{source}"
        )
    if trace.get("combine"):
        lines.append("  (several scoring verdicts fired: the lowest counts)")
    if "expected_score" in trace:
        lines.append(
            f"  expected score {trace['expected_score']:.3f} over {len(trace['walks'])} walks "
            f"(mass explored {trace['explored_mass']:.3f})"
        )
    return lines
