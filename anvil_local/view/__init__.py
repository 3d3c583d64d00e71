"""`anvil view`: results files as one self-contained HTML page to look at offline.

`page.py` builds the page (header, summary, the cases table, its inline style and script);
`traces.py` draws one result (`dag.py` a DAG walk on its graph, `bars.py` a G-Eval's
distribution, `tokens.py` a likelihood's tokens), all as plain inline SVG or HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from anvil_local.errors import io_error
from anvil_local.run.pairs import pair_results
from anvil_local.run.results import read_results
from anvil_local.view.page import render_page


def write_view(
    inputs: Sequence[str | Path], out: str | Path, renames: Mapping[str, str] | None = None
) -> int:
    """Write the page for these results files to `out`; returns its number of rows."""
    files = [read_results(path) for path in inputs]
    paired = pair_results(files, renames)
    page = render_page(files, paired, renames)
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise io_error(out, exc) from exc
    return len(paired)
