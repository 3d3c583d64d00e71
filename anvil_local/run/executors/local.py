"""The in-process executor: one judge, the groups in plan order."""

from __future__ import annotations

from typing import Any

from anvil_local.judge.session import JudgeSession
from anvil_local.models.sessions import as_session, open_session
from anvil_local.run.executors.base import Deliver, judge_group
from anvil_local.run.plan import Plan


class LocalExecutor:
    """Judges in this process, group after group. `session` (or a judge) is used as given;
    otherwise each group's judge is opened when it first has work."""

    workers = 1

    def __init__(self, session: JudgeSession | Any = None) -> None:
        self.session = session

    def execute(self, plan: Plan, deliver: Deliver) -> None:
        if not plan.groups:
            return
        given = as_session(self.session) if self.session is not None else None
        sessions: dict[int, JudgeSession] = {}
        for group, judge in zip(plan.groups, plan.group_judge, strict=True):
            session = given or sessions.get(judge)
            if session is None:
                session = sessions[judge] = open_session(plan.judges[judge])
            if judge_group(group, plan.metrics, session, plan.include_reason, deliver):
                return
