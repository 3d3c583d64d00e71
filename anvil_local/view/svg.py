"""The few SVG pieces the drawings are made of, as text (no library: the page must open
offline and a dependency would earn nothing here). Every string that came from a results
file goes through `esc`."""

from __future__ import annotations

import html

#: An estimate of a character's width at 11px in a sans-serif font, to cut labels to fit.
CHAR = 6.3


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def fit(text: str, width: float, size: float = 11) -> str:
    """`text` on one line, cut with an ellipsis to about `width` pixels."""
    text = " ".join(str(text).split())
    most = max(3, int(width / (CHAR * size / 11)))
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"


def svg(width: float, height: float, body: list[str], label: str, cls: str = "") -> str:
    """An inline <svg> that scales down with its container."""
    return (
        f'<svg class="{esc(cls)}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{esc(label)}" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}">' + "".join(body) + "</svg>"
    )


def text(
    x: float,
    y: float,
    content: str,
    *,
    size: float = 11,
    anchor: str = "start",
    cls: str = "",
    tooltip: str | None = None,
) -> str:
    title = f"<title>{esc(tooltip)}</title>" if tooltip else ""
    extra = f' class="{esc(cls)}"' if cls else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" text-anchor="{anchor}"{extra}>'
        f"{title}{esc(content)}</text>"
    )


def rect(
    x: float, y: float, w: float, h: float, *, cls: str = "", rx: float = 0, fill: str = ""
) -> str:
    extra = f' class="{esc(cls)}"' if cls else ""
    paint = f' fill="{fill}"' if fill else ""
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" '
        f'rx="{rx:g}"{extra}{paint}/>'
    )


def line(x1: float, y1: float, x2: float, y2: float, cls: str = "") -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" class="{esc(cls)}"/>'
