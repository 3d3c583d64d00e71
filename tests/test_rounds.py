"""Rounds (judge/rounds.py): a case's metrics run side by side and every question they ask
at the same step is sent in one batch, composed by metric order whatever the threads'
timing; a failed batch fails each metric waiting on it. And RemoteJudge.decide: questions
that share a state travel in one request (native dialects), all of them in one over anvil
serve's extension. Fake judges and stand-ins; the real server: test_model_remote.py."""

from __future__ import annotations

import random
import time

import httpx
import pytest

from anvil_local.errors import JudgeUnavailable, RemoteJudgeError
from anvil_local.judge import Prompt
from anvil_local.judge.remote import MAX_QUESTIONS, RemoteJudge, RemoteSpec
from anvil_local.judge.results import Ask, ChoiceResult, Usage
from anvil_local.judge.rounds import Rounds
from tests import dialects


def prompt(state: str, question: str) -> Prompt:
    return Prompt(("Header.\n\n", f"{state}\n\n"), question)


class Batches:
    """A fake `decide`: records each batch's questions, answers the first option."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.sent: list[list[str]] = []
        self.fail_on = fail_on

    def __call__(self, asks):
        self.sent.append([a.prompt.question for a in asks])
        if self.fail_on == len(self.sent):
            raise JudgeUnavailable("server gone")
        return [ChoiceResult(a.options, (1.0, 0.0), 0, Usage(calls=1), 0.0) for a in asks]


def metric(rounds: Rounds, name: str, steps: int, jitter: bool = True):
    """A metric asking `steps` questions one after another (a DAG's walk), sleeping a
    random while between them so the threads arrive in any order."""

    def run() -> str:
        for step in range(steps):
            if jitter:
                time.sleep(random.random() / 100)
            rounds.ask([Ask(prompt("case", f"{name}{step}"), ("Yes", "No"))])
        return name

    return run


def test_each_step_of_every_metric_travels_in_one_batch_in_metric_order():
    for _ in range(5):  # the same batches however the threads are scheduled
        decide = Batches()
        rounds = Rounds(decide)
        out = rounds.run([metric(rounds, "a", 3), metric(rounds, "b", 1), metric(rounds, "c", 2)])
        assert out == ["a", "b", "c"]
        assert decide.sent == [["a0", "b0", "c0"], ["a1", "c1"], ["a2"]]
        assert (rounds.batches, rounds.questions) == (3, 6)


def test_a_metric_asking_several_questions_at_once_keeps_them_together_and_in_order():
    decide = Batches()
    rounds = Rounds(decide)

    def many() -> int:
        asks = [Ask(prompt("case", f"claim{i}"), ("Yes", "No")) for i in range(4)]
        return len(rounds.ask(asks))

    assert rounds.run([metric(rounds, "a", 1), many]) == ["a", 4]
    assert decide.sent == [["a0", "claim0", "claim1", "claim2", "claim3"]]


def test_a_failed_batch_fails_every_metric_waiting_on_it_and_spares_the_finished():
    decide = Batches(fail_on=2)
    rounds = Rounds(decide)
    out = rounds.run([metric(rounds, "a", 2), metric(rounds, "b", 1), metric(rounds, "c", 3)])
    assert out[1] == "b"
    assert isinstance(out[0], JudgeUnavailable) and out[0] is out[2]
    assert decide.sent == [["a0", "b0", "c0"], ["a1", "c1"]]


def test_a_batch_refused_for_one_question_is_asked_again_metric_by_metric():
    """A 422 for one question fails only the metric that asked it."""

    def decide(asks):
        decide.sent.append([a.prompt.question for a in asks])
        if any(a.prompt.question == "bad0" for a in asks):
            raise RemoteJudgeError("server X refused the request: 422 too many options")
        return [ChoiceResult(a.options, (1.0, 0.0), 0, Usage(calls=1), 0.0) for a in asks]

    decide.sent = []
    rounds = Rounds(decide)
    out = rounds.run([metric(rounds, "a", 2), metric(rounds, "bad", 1), metric(rounds, "c", 1)])
    assert out[0] == "a" and out[2] == "c"
    assert isinstance(out[1], RemoteJudgeError) and "422" in str(out[1])
    assert decide.sent == [["a0", "bad0", "c0"], ["a0"], ["bad0"], ["c0"], ["a1"]]


def test_a_metric_that_never_asks_does_not_hold_a_round():
    decide = Batches()
    rounds = Rounds(decide)
    assert rounds.run([lambda: "code", metric(rounds, "a", 2)]) == ["code", "a"]
    assert decide.sent == [["a0"], ["a1"]]


def judge_on(dialect: str, recorder) -> RemoteJudge:
    spec = RemoteSpec("http://server:8000", retries=0)
    transport = dialects.transport(dialect, recorder)
    return RemoteJudge(spec, client=httpx.Client(transport=transport, base_url=spec.url))


def test_native_questions_sharing_a_state_travel_in_one_request():
    recorder = dialects.Recorder()
    judge = judge_on("vllm", recorder)
    asks = [
        Ask(prompt("first case", "Is it kind? (Yes or No)"), ("Yes", "No")),
        Ask(prompt("second case", "Is it kind? (Yes or No)"), ("Yes", "No")),
        Ask(prompt("first case", "Which tone?"), ("warm", "cold")),
        Ask(prompt("first case", "How good?"), scale=(1, 5)),
    ]
    before = len(recorder.requests)
    results = judge.decide(asks)
    sent = [body for _, path, body in recorder.requests[before:]]
    assert len(sent) == 2  # one request per distinct state
    assert sent[0]["state"] == "".join(asks[0].prompt.blocks)
    assert [q["type"] for q in sent[0]["questions"].values()] == ["noul", "choice", "score"]
    assert list(sent[0]["questions"]) == ["q1", "q2", "q3"]
    assert sent[1]["questions"] == {
        "q": {"type": "noul", "instructions": "Is it kind? (Yes or No)"}
    }
    # results in the order asked, each of its own type
    assert [r.probabilities[0] for r in results[:3]] == pytest.approx([0.8, 0.8, 0.7])
    assert results[3].lo == 1 and len(results[3].probabilities) == 5
    # each request's usage counted once
    assert sum(r.usage.calls for r in results) == 2 == judge.usage.calls


def test_more_questions_than_a_request_takes_are_split():
    recorder = dialects.Recorder()
    judge = judge_on("llama.cpp", recorder)
    asks = [Ask(prompt("case", f"q{i}? (Yes or No)"), ("Yes", "No")) for i in range(70)]
    before = len(recorder.requests)
    assert len(judge.decide(asks)) == 70
    sizes = [len(body["questions"]) for _, _, body in recorder.requests[before:]]
    assert sizes == [MAX_QUESTIONS, 70 - MAX_QUESTIONS]
