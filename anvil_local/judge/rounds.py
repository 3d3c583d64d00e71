"""Rounds: the metrics of one case judged side by side, their questions sent together.

A metric asks its judge one question at a time, and a DAG's next question depends on the
last answer. Over a decision server that costs a request per question, although System One
takes many questions in one request and reads their shared state once. `Rounds` runs a
case's metrics on threads; each `choose` / `score` / `decide` they make waits, and once every
metric still running is waiting, the waiting questions go to the judge's `decide` as one
batch (one request over anvil serve; one per distinct state elsewhere). So the first
question of every DAG and every G-Eval score of a panel travel together, then every DAG's
second question, and so on.

Which questions share a round depends only on the metrics and the answers, never on thread
timing: a round is sent only when every metric still running waits, and its questions are
ordered by metric, not by arrival. Text generation (task nodes, G-Eval steps) is not
batched: a metric generating is still running, and the round waits for it. A batch the
server refuses for one question (a 422) is asked again metric by metric, so only the metric
that asked it fails, as when each question was its own request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from anvil_local.errors import JudgeRefused, JudgeUnavailable, RemoteJudgeError
from anvil_local.judge.results import Ask, ChoiceResult, ScoreResult

T = TypeVar("T")
Answer = ChoiceResult | ScoreResult


class Rounds:
    """One case's metrics (`tasks`) run together over `decide` (the judge's batch call)."""

    def __init__(self, decide: Callable[[Sequence[Ask]], list[Answer]]) -> None:
        self._decide = decide
        self._lock = threading.Condition()
        self._waiting: dict[int, list[Ask]] = {}
        self._answers: dict[int, list[Answer] | BaseException] = {}
        self._running = 0
        self._task = threading.local()
        #: How many batches were sent, and how many questions they held.
        self.batches = 0
        self.questions = 0

    def ask(self, asks: Sequence[Ask]) -> list[Answer]:
        """Answer `asks` in the round under way (called from a task's thread)."""
        number = self._task.number
        with self._lock:
            self._waiting[number] = list(asks)
            self._send_if_all_wait()
            while number not in self._answers:
                self._lock.wait()
            answer = self._answers.pop(number)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def run(self, tasks: Sequence[Callable[[], T]]) -> list[T | BaseException]:
        """Run every task to its end; each one's return value, or what it raised."""
        out: list[T | BaseException] = [RuntimeError("not run")] * len(tasks)
        self._running = len(tasks)

        def work(number: int, task: Callable[[], T]) -> None:
            self._task.number = number
            try:
                out[number] = task()
            except BaseException as exc:  # handed to the caller, which decides
                out[number] = exc
            finally:
                with self._lock:
                    self._running -= 1
                    self._send_if_all_wait()

        threads = [
            threading.Thread(target=work, args=(n, t), name=f"round-{n}", daemon=True)
            for n, t in enumerate(tasks)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return out

    def _send_if_all_wait(self) -> None:
        """With the lock held: once every running task waits, answer them all at once."""
        if not self._waiting or len(self._waiting) < self._running:
            return
        waiting = dict(sorted(self._waiting.items()))  # by task: metric order
        self._waiting.clear()
        asks = [ask for group in waiting.values() for ask in group]
        self.batches += 1
        self.questions += len(asks)
        try:
            answers = self._decide(asks)
        except RemoteJudgeError as exc:
            if isinstance(exc, JudgeRefused | JudgeUnavailable) or len(waiting) == 1:
                for number in waiting:
                    self._answers[number] = exc
            else:  # one question refused (a 422): ask each metric's alone, so only its fails
                for number, group in waiting.items():
                    try:
                        self._answers[number] = self._decide(group)
                    except RemoteJudgeError as own:
                        self._answers[number] = own
        except BaseException as exc:
            for number in waiting:
                self._answers[number] = exc
        else:
            at = 0
            for number, group in waiting.items():
                self._answers[number] = answers[at : at + len(group)]
                at += len(group)
        self._lock.notify_all()


def run_together(
    session: Any, tasks: Sequence[Callable[[], T]]
) -> tuple[list[T | BaseException], Rounds]:
    """Run `tasks` (the metrics of one case, each judging on `session`) as rounds over the
    session's judge; the session routes its decisions through the rounds meanwhile."""
    rounds = Rounds(session.judge.decide)
    session.rounds = rounds
    try:
        return rounds.run(tasks), rounds
    finally:
        session.rounds = None
