"""A likelihood metric's text, each token shaded by how unlikely the judge found it (its
log-probability), the token the score was read from marked, the tokens not counted grey."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anvil_local.view.svg import esc

#: Log-probabilities at or below this are drawn at full strength.
FLOOR = -8.0


def shade(logprob: float) -> float:
    """0 (certain) to 1 (at or below FLOOR)."""
    return min(1.0, max(0.0, logprob / FLOOR))


def token_html(trace: Mapping[str, Any]) -> str:
    tokens = trace.get("tokens") or []
    weakest = trace.get("weakest_token")
    skipped = set(trace.get("skipped_tokens") or [])
    spans = []
    for index, pair in enumerate(tokens):
        token, logprob = str(pair[0]), float(pair[1])
        classes = ["tok"]
        if index == weakest:
            classes.append("weakest")
        if index in skipped:
            classes.append("skipped")
            style = ""
        else:
            style = f' style="background:rgba(220,38,38,{0.85 * shade(logprob):.2f})"'
        title = f"#{index} {token!r}: log p {logprob:.2f}"
        if index == weakest:
            title += " (the score's token)"
        spans.append(
            f'<span class="{" ".join(classes)}"{style} title="{esc(title)}">{esc(token)}</span>'
        )
    legend = (
        '<div class="legend">log-probability: <span class="scale"></span> 0 … '
        f"{FLOOR:g} or less; outlined: the token the score comes from"
        + ("; grey: not counted" if skipped else "")
        + "</div>"
    )
    return f'<div class="tokens">{"".join(spans)}</div>{legend}'
