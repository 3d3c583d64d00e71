"""How much of this process's cores other processes use: what tells tuning that the
machine is too busy to measure which file and thread count are fastest."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path


class CpuMeter:
    """The share of this process's cores that OTHER processes kept busy between `start()`
    and `stop()`: busy time of those cores in /proc/stat (steal included: a VM's neighbours
    count), minus what this process and its finished children used. None where /proc/stat
    cannot be read."""

    def __init__(self, stat: Path = Path("/proc/stat")) -> None:
        self.stat = stat
        try:
            self.cpus = sorted(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not on Linux
            self.cpus = list(range(os.cpu_count() or 1))
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._start: tuple[float, float, float] | None = None

    def _busy_seconds(self) -> float | None:
        try:
            lines = self.stat.read_text().splitlines()
        except OSError:
            return None
        wanted = {f"cpu{n}" for n in self.cpus}
        busy = 0
        seen = 0
        for line in lines:
            name, *values = line.split()
            if name in wanted:
                numbers = [int(v) for v in values]
                # user nice system idle iowait irq softirq steal (guest is inside user)
                busy += sum(numbers[:3]) + sum(numbers[5:8])
                seen += 1
        return busy / self._tick if seen else None

    @staticmethod
    def _own_seconds() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    def start(self) -> None:
        busy = self._busy_seconds()
        self._start = None if busy is None else (busy, self._own_seconds(), time.monotonic())

    def stop(self) -> float | None:
        if self._start is None:
            return None
        busy = self._busy_seconds()
        if busy is None:
            return None
        busy0, own0, wall0 = self._start
        wall = time.monotonic() - wall0
        if wall <= 0:
            return None
        others = (busy - busy0) - (self._own_seconds() - own0)
        return max(0.0, others) / (wall * len(self.cpus))
