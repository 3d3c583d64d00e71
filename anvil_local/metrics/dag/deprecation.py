"""DeepEval's DeprecationWarning for a node built bottom-up (`children=`), with its
category and message, so ported code hears what DeepEval would tell it. Graphs read from a
file or a DeepEval JSON document are built bottom-up by this package, quietly."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

_QUIET: ContextVar[bool] = ContextVar("anvil_quiet_bottom_up", default=False)
_PACKAGE = str(Path(__file__).resolve().parents[2])


@contextlib.contextmanager
def quiet_bottom_up() -> Iterator[None]:
    """Build nodes with `children=` inside this block without the warning."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def _caller_level() -> int:
    """The stack level of the first frame outside this package (and the dataclass
    `__init__`), so the warning names the line that built the node."""
    frame = sys._getframe(2)
    level = 2
    while frame is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE) or frame.f_code.co_filename == "<string>"
    ):
        frame = frame.f_back
        level += 1
    return level


def warn_bottom_up(class_name: str, builder_method: str) -> None:
    """DeepEval's warning: `children=` is deprecated; build top-down with the builder."""
    if _QUIET.get():
        return
    warnings.warn(
        f"Passing 'children' to '{class_name}' (the bottom-up way of building a DAG) is "
        "deprecated and will be removed in a future release. "
        f"Construct '{class_name}' without 'children' and use '{builder_method}()' to build "
        "the DAG top-down instead.",
        DeprecationWarning,
        stacklevel=_caller_level(),
    )
