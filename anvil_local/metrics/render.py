"""Human-readable results (verbose_mode, `anvil explain`): the frame every metric shares;
each trace record renders its own lines."""

from __future__ import annotations

from typing import Any

from anvil_local.metrics.result import MetricResult

_BAR = 30


def _bar(p: float) -> str:
    return "#" * round(p * _BAR)


def probability_lines(probabilities: dict[str, float], chosen: Any = None) -> list[str]:
    """One line per option: a mark on the chosen one, the probability and a bar."""
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
    lines += result.trace.lines()
    if result.reason:
        lines.append(f"  reason: {result.reason}")
    u = result.usage
    lines.append(
        f"  tokens: {u.evaluated_tokens} evaluated of {u.prompt_tokens} prompt "
        f"({u.reused_tokens} reused), {u.calls} calls, {result.seconds:.2f} s"
    )
    return "\n".join(lines)
