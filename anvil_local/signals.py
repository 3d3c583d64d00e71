"""How a command is stopped from outside: SIGINT and SIGTERM alike, remembered for the exit
status.

The command line calls `install()` once. SIGTERM (what `timeout`, a CI cancellation and
`kill` send) is then raised in the main thread as `Terminated`, a KeyboardInterrupt, so every
path that stops cleanly on Ctrl-C runs for it too: stop handing out work, let what is being
judged finish for a short grace period, end the workers, flush what was judged, say how to
resume. The command exits 128 + the first signal (130 for SIGINT, 143 for SIGTERM). A second
signal during that stop makes `forced()` true: wait for nothing more.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

_received: list[int] = []
_installed: list[bool] = []  # whether the command line routed the signals here


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be."""


class Interrupted(KeyboardInterrupt):
    """A stop already handled below the command line, with the one line that says what was
    kept and how to go on (the command line prints it and exits 128 + the signal)."""


def note(sig: int) -> None:
    """Record a signal a component handled itself (training stops at its next step)."""
    _received.append(int(sig))


def _handle(sig: int, frame: Any) -> None:
    note(sig)
    if sig == signal.SIGTERM:
        raise Terminated
    raise KeyboardInterrupt


def install() -> None:
    """Route SIGINT and SIGTERM through `_handle` (from the main thread only, as Python
    requires; elsewhere nothing changes)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handle)
        signal.signal(signal.SIGTERM, _handle)
        _installed.append(True)


def restore() -> None:
    """Take SIGINT and SIGTERM back after a library replaced their handlers (a local Ray's
    core worker installs its own, which ends the process without the clean stop); nothing
    when `install()` was never called (a library user's own handlers stay theirs)."""
    if _installed:
        install()


def received() -> int | None:
    """The first signal that asked this process to stop, if any."""
    return _received[0] if _received else None


def forced() -> bool:
    """A second signal came: stop at once."""
    return len(_received) > 1


def exit_status() -> int:
    """128 + the first signal (130 when none was recorded: a KeyboardInterrupt raised by
    other means)."""
    return 128 + (received() or signal.SIGINT)
