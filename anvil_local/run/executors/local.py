"""The in-process executor: one judge, the groups in plan order."""

from __future__ import annotations

from typing import Any

from anvil_local.judge.session import JudgeSession
from anvil_local.models.sessions import as_session, open_session
from anvil_local.run.executors.base import Deliver, judge_group
from anvil_local.run.plan import Plan


class LocalExecutor:
    """Judges in this process. `session` (or a judge) is used as given; otherwise the
    plan's model is opened when there is work."""

    workers = 1

    def __init__(self, session: JudgeSession | Any = None) -> None:
        self.session = session

    def execute(self, plan: Plan, deliver: Deliver) -> None:
        if not plan.groups:
            return
        session = as_session(self.session) if self.session is not None else open_session(plan.model)
        for group in plan.groups:
            if judge_group(group, plan.metrics, session, plan.include_reason, deliver):
                return
