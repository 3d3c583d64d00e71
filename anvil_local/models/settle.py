"""Choosing from noisy rounds: the choice rule of tuning, and whether it is certain.

A median over a few rounds still moves with the host's noise, so a choice is taken as
certain only when it stays the same wherever in its interval each candidate's median lies
(`median_span`, a sign-test interval: no assumption about how the noise is distributed).
When it is not, `decide` names the comparison it hangs on and the candidates to measure
again; only those, so a losing candidate's noise never blocks a clear winner. Pure
functions: no probe, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

#: The coverage the interval of a median keeps once there are enough rounds to narrow it.
COVERAGE = 0.9


class Candidate(Protocol):
    """A file at a thread count as measured (`tuning.Measurement`)."""

    @property
    def model(self) -> str: ...
    @property
    def threads(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def span(self) -> tuple[float, float]: ...


Span = tuple[float, float]


def median_span(seconds: Sequence[float], coverage: float = COVERAGE) -> Span:
    """Where the median of these rounds lies: the k-th fastest and the k-th slowest round,
    k as large as still covers the median with `coverage` (the fastest and the slowest
    while there are few rounds, so with three "the winner's slowest round beats the
    runner-up's fastest"). One stray round stops counting once there are eight."""
    ordered = sorted(seconds)
    n = len(ordered)
    k = 1
    while k + 1 <= n - k and _coverage(n, k + 1) >= coverage:
        k += 1
    return ordered[k - 1], ordered[n - k]


def _coverage(n: int, k: int) -> float:
    """P(the k-th smallest of n rounds <= median <= the k-th largest) for any noise."""
    return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2.0**n


def choose(measured: Sequence[Candidate], original: str, margin: float) -> tuple[str, int]:
    """(file, threads): the fastest converted file if it beats the original's best by
    `margin`, else the original; then that file at all the thread counts measured, unless
    fewer are faster by `margin` too (a near tie keeps the most threads)."""

    def best(model: str) -> Candidate:
        return min((m for m in measured if m.model == model), key=lambda m: m.seconds)

    base = best(original)
    pick = base
    for model in dict.fromkeys(m.model for m in measured if m.model != original):
        other = best(model)
        if other.seconds * margin <= base.seconds and other.seconds < pick.seconds:
            pick = other
    runs = [m for m in measured if m.model == pick.model]
    most = max(runs, key=lambda m: m.threads)
    fastest = min(runs, key=lambda m: m.seconds)
    threads = fastest.threads if fastest.seconds * margin <= most.seconds else most.threads
    return pick.model, threads


@dataclass(frozen=True)
class Decision:
    """The medians' choice, whether it holds over the intervals, why (one line), and the
    (model, threads) to measure again when it does not."""

    model: str
    threads: int
    certain: bool
    why: str
    contested: frozenset[tuple[str, int]] = frozenset()


def _faster(a: Span, b: Span, margin: float) -> bool | None:
    """Is a faster than b by `margin` (seconds times margin at most b's)? None: it depends
    on where in the intervals the medians lie."""
    if a[1] * margin <= b[0]:
        return True
    if a[0] * margin > b[1]:
        return False
    return None


def _best_span(runs: Sequence[Candidate]) -> Span:
    """The interval of the fastest of several candidates (the file's best thread count)."""
    return min(r.span[0] for r in runs), min(r.span[1] for r in runs)


def _name(runs: Sequence[Candidate]) -> str:
    if len({r.model for r in runs}) == 1 and len(runs) > 1:
        return runs[0].model
    return ", ".join(f"{r.model} with {r.threads} threads" for r in runs)


def _close(a: Sequence[Candidate], b: Sequence[Candidate], margin: float) -> str:
    sa, sb = _best_span(a), _best_span(b)
    by = f"{margin - 1:.0%} faster" if margin > 1 else "faster"
    return (
        f"{_name(a)} ({sa[0]:.2f}-{sa[1]:.2f} s a probe) may or may not be {by} than "
        f"{_name(b)} ({sb[0]:.2f}-{sb[1]:.2f} s)"
    )


def _ratio(slow: Sequence[Candidate], fast: Sequence[Candidate], beats: bool = True) -> str:
    """The median speed-up on the probe and its bound over the intervals: "1.87x, at
    least 1.62x" for one that beats, "1.05x, at most 1.08x" for one that does not."""
    median = min(r.seconds for r in slow) / min(r.seconds for r in fast)
    if beats:
        return f"{median:.2f}x, at least {_best_span(slow)[0] / _best_span(fast)[1]:.2f}x"
    return f"{median:.2f}x, at most {_best_span(slow)[1] / _best_span(fast)[0]:.2f}x"


Doubt = tuple[list[Candidate], list[Candidate], float]  # a faster than b by the margin?


def _doubts(
    groups: dict[str, list[Candidate]], against: list[Candidate], margin: float
) -> list[Doubt]:
    """The comparisons of a pick that the intervals leave open: each group against
    `against` (by `margin`), then the fastest of those that beat it against the others."""
    doubts: list[Doubt] = []
    winners = []
    for name, runs in groups.items():
        beats = _faster(_best_span(runs), _best_span(against), margin)
        if beats is None:
            doubts.append((runs, against, margin))
        elif beats:
            winners.append(name)
    if len(winners) > 1:
        top = min(winners, key=lambda n: min(r.seconds for r in groups[n]))
        for name in winners:
            if name != top and not _faster(_best_span(groups[top]), _best_span(groups[name]), 1):
                doubts.append((groups[top], groups[name], 1.0))
    return doubts


def decide(measured: Sequence[Candidate], original: str, margin: float) -> Decision:
    """The medians' choice (`choose`) and whether every comparison it made holds over the
    intervals: the file against the original's best (and other qualifying files), then
    fewer threads against the most."""
    model, threads = choose(measured, original, margin)
    by_model: dict[str, list[Candidate]] = {}
    for m in measured:
        by_model.setdefault(m.model, []).append(m)
    base = by_model[original]
    others = {name: runs for name, runs in by_model.items() if name != original}
    doubts = _doubts(others, base, margin)
    notes = []
    if model != original:
        notes.append(f"{model} is faster than {original} ({_ratio(base, by_model[model])})")
    elif others:
        rival = min(others, key=lambda n: min(r.seconds for r in others[n]))
        notes.append(
            f"{rival} is not {margin - 1:.0%} faster than {original} "
            f"({_ratio(base, others[rival], beats=False)})"
        )
    runs = by_model[model]
    most = max(runs, key=lambda m: m.threads)
    fewer = {str(r.threads): [r] for r in runs if r is not most}
    doubts += _doubts(fewer, [most], margin)
    chosen = next(r for r in runs if r.threads == threads)
    if chosen is not most:
        notes.append(
            f"{threads} threads are faster than {most.threads} ({_ratio([most], [chosen])})"
        )
    elif fewer:
        rival_runs = min(fewer.values(), key=lambda r: r[0].seconds)
        notes.append(
            f"{rival_runs[0].threads} threads are not {margin - 1:.0%} faster than "
            f"{most.threads} ({_ratio([most], rival_runs, beats=False)})"
        )
    if doubts:
        contested = frozenset((r.model, r.threads) for a, b, _ in doubts for r in (*a, *b))
        return Decision(model, threads, False, _close(*doubts[0]), contested)
    return Decision(model, threads, True, "; ".join(notes) or "the only candidate")
