"""Probability distributions drawn as bars: a G-Eval's distribution over its score range
(one bar per score, the weighted mean marked), and a verdict's options (one row each)."""

from __future__ import annotations

from collections.abc import Mapping

from anvil_local.view.svg import esc, fit, line, rect, svg, text


def _number(key: str) -> float | None:
    try:
        return float(key)
    except ValueError:
        return None


def score_bars(
    distribution: Mapping[str, float],
    *,
    weighted: float | None = None,
    most_likely: object = None,
    label: str = "score distribution",
) -> str:
    """Vertical bars, one per score in order; the weighted mean as a marker on the axis."""
    keys = sorted(distribution, key=lambda k: (_number(k) is None, _number(k) or 0, k))
    if not keys:
        return ""
    bar, gap, left, top, plot = 34, 8, 34, 16, 110
    width = left + len(keys) * (bar + gap) + 12
    height = top + plot + 44
    peak = max(max(distribution.values()), 1e-9)
    body = [
        line(left - 4, top + plot, width - 8, top + plot, "axis"),
        text(left - 8, top + 4, f"{peak:.0%}", size=9, anchor="end", cls="muted"),
        text(left - 8, top + plot, "0", size=9, anchor="end", cls="muted"),
    ]
    for i, key in enumerate(keys):
        p = float(distribution[key])
        x = left + i * (bar + gap)
        h = plot * p / peak
        cls = "bar top" if str(key) == str(most_likely) else "bar"
        body.append(
            f"<g><title>{esc(key)}: {p:.1%}</title>"
            + rect(x, top + plot - h, bar, h, cls=cls)
            + "</g>"
        )
        body.append(text(x + bar / 2, top + plot + 14, key, anchor="middle"))
        if p >= 0.005:
            body.append(text(x + bar / 2, top + plot - h - 3, f"{p:.0%}", size=9, anchor="middle"))
    numbers = [_number(k) for k in keys]
    if weighted is not None and all(n is not None for n in numbers) and len(keys) > 1:
        lo, hi = numbers[0], numbers[-1]
        span = (hi - lo) or 1.0  # type: ignore[operator]
        x = left + bar / 2 + (weighted - lo) / span * (len(keys) - 1) * (bar + gap)  # type: ignore[operator]
        body.append(line(x, top - 4, x, top + plot + 18, "marker"))
        body.append(
            text(
                x,
                top + plot + 32,
                f"weighted {weighted:.2f}",
                size=10,
                anchor="middle",
                cls="marker-label",
            )
        )
    return svg(width, height, body, label, "bars score-bars")


def option_bars(
    probabilities: Mapping[str, float], chosen: str | None = None, label: str = "options"
) -> str:
    """One row per option: its name, a bar as long as its probability, the figure."""
    if not probabilities:
        return ""
    name_w, bar_w, row = 170, 180, 20
    width = name_w + bar_w + 60
    height = row * len(probabilities) + 8
    body = []
    for i, (option, p) in enumerate(probabilities.items()):
        y = 4 + i * row
        cls = "bar top" if option == chosen else "bar"
        body.append(
            text(
                name_w - 8,
                y + 13,
                fit(option, name_w - 12),
                anchor="end",
                cls="chosen" if option == chosen else "",
                tooltip=option,
            )
        )
        body.append(rect(name_w, y + 3, bar_w, row - 6, cls="track"))
        body.append(rect(name_w, y + 3, bar_w * float(p), row - 6, cls=cls))
        body.append(text(name_w + bar_w + 6, y + 13, f"{float(p):.1%}", size=10))
    return svg(width, height, body, label, "bars option-bars")
