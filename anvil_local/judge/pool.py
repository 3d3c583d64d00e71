"""JudgePool: the loaded judges of a process, by model file and load settings.

Loading a GGUF costs seconds and hundreds of MB, so `measure()`, `evaluate()`, the pytest
fixture and every session in a process share one judge per (file, sha256, settings). The
pool owns them: at most `limit` are held (the least recently used is let go first: it is
freed once no session still uses it), and `clear()` closes and forgets them all at once (for
long-lived services and tests; a judge used after that raises instead of reading freed
memory).
"""

from __future__ import annotations

import atexit
import logging
import os
from collections import OrderedDict
from typing import Any

from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.settings import JudgeSettings

log = logging.getLogger(__name__)

Key = tuple[str, str, JudgeSettings]


class JudgePool:
    """Loaded judges, loaded on first use and reused after."""

    def __init__(self, limit: int = 4) -> None:
        if limit < 1:
            raise ValueError("a judge pool holds at least one judge")
        self.limit = limit
        self._judges: OrderedDict[Key, Any] = OrderedDict()

    @staticmethod
    def key(model: ResolvedModel) -> Key:
        where = model.path if model.remote else os.path.realpath(model.path)
        return (where, model.sha256, model.settings)

    def get(self, model: ResolvedModel) -> Any:
        """The judge for this model file and settings (loaded now if it is not held)."""
        key = self.key(model)
        judge = self._judges.get(key)
        if judge is not None:
            self._judges.move_to_end(key)
            return judge
        if model.remote:  # a decision server: the first one (a run spreads over the rest)
            from anvil_local.judge.remote import RemoteJudge

            judge = RemoteJudge(model.remote[0], expected=model)
        else:
            from anvil_local.judge.judge import Judge

            judge = Judge.load(model)
        self._judges[key] = judge
        while len(self._judges) > self.limit:
            _, oldest = self._judges.popitem(last=False)
            log.debug("letting %s go to make room in the judge pool", oldest.model.name)
        return judge

    def __len__(self) -> int:
        return len(self._judges)

    def __contains__(self, model: object) -> bool:
        return isinstance(model, ResolvedModel) and self.key(model) in self._judges

    def clear(self) -> None:
        """Close every judge held (their llama.cpp memory is freed) and forget them."""
        while self._judges:
            _, judge = self._judges.popitem(last=False)
            judge.close()

    close = clear


_PROCESS_POOL = JudgePool()
atexit.register(_PROCESS_POOL.clear)


def process_pool() -> JudgePool:
    """The pool this process's sessions share unless they are given their own."""
    return _PROCESS_POOL
