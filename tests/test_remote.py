"""The remote judge without a model: each decision server's dialect parsed (stand-ins in
tests/dialects.py), the native mapping of choose / score / generate, retries on 429 / 503 and
dropped connections, no retry on 401 / 404 / 422 / 501, each failure one line; the spec
strings; a run spread over two servers with one dropping out (fake servers). Against the
real `anvil serve`: test_model_remote.py."""

from __future__ import annotations

import json

import httpx
import pytest

from anvil_local.errors import (
    GenerationError,
    JudgeRefused,
    JudgeUnavailable,
    NoTextGeneration,
    RemoteJudgeError,
)
from anvil_local.judge import Prompt
from anvil_local.judge.remote import RemoteJudge, RemoteSpec
from anvil_local.models.resolve import remote_specs
from tests import dialects

PROMPT = Prompt(
    ("You are judging the test case below.\n\n", "Input:\nA text.\n\n"), "Is it good? (Yes or No)"
)


def judge_on(dialect: str, recorder=None, retries: int = 0, t: dict | None = None) -> RemoteJudge:
    spec = RemoteSpec("http://server:8000", retries=retries)
    transport = dialects.transport(dialect, recorder, **(t or {}))
    return RemoteJudge(spec, client=httpx.Client(transport=transport, base_url=spec.url))


@pytest.mark.parametrize("dialect", ["vllm", "llama.cpp", "ollama"])
def test_each_dialect_answers_through_the_native_mapping(dialect):
    recorder = dialects.Recorder()
    judge = judge_on(dialect, recorder)
    assert not judge.verbatim  # no identity: native questions
    assert judge.server_model == dialects.MODELS[dialect]["data"][0]["id"]
    yes_no = judge.choose(PROMPT, ["Yes", "No"])
    assert yes_no.probabilities == pytest.approx((0.8, 0.2)) and yes_no.choice == "Yes"
    sent = recorder.requests[-1][2]
    assert sent["state"] == "".join(PROMPT.blocks)  # the blocks are the state
    assert sent["questions"] == {"q": {"type": "noul", "instructions": PROMPT.question}}
    picked = judge.choose(PROMPT, ["poor", "fair", "good"])
    assert picked.choice == "poor" and sum(picked.probabilities) == pytest.approx(1)
    assert recorder.requests[-1][2]["questions"]["q"]["criteria"] == {
        "poor": None,
        "fair": None,
        "good": None,
    }
    score = judge.score(PROMPT, 1, 5)
    assert recorder.requests[-1][2]["questions"]["q"] == {
        "type": "score",
        "instructions": PROMPT.question,
        "criteria": ["1", "2", "3", "4", "5"],
    }
    assert score.lo == 1 and score.weighted == pytest.approx(
        1 + 4 * 0.5 + sum(i * 0.125 for i in range(4))
    )
    text = judge.generate(PROMPT, 20, schema={"type": "object"})
    assert json.loads(text.text) == {"topic": "billing"} and text.finished
    assert judge.usage.calls == 4 and judge.usage.prompt_tokens == 3 * 123 + 40
    assert judge.model.sha256 != "" and judge.model.name.endswith("@http://server:8000")


def test_a_range_past_the_servers_level_limit_is_an_ordered_choice():
    recorder = dialects.Recorder()
    judge = judge_on("vllm", recorder)
    score = judge.score(PROMPT, 0, 10)  # 11 levels; the spec's limit is 10
    sent = recorder.requests[-1][2]["questions"]["q"]
    assert sent["type"] == "choice" and list(sent["criteria"]) == [str(v) for v in range(11)]
    assert len(score.probabilities) == 11 and score.lo == 0


@pytest.mark.parametrize(
    ("dialect", "message"),
    [
        ("vllm", "Structured decisions are supported for Qwen3-family models only"),
        ("llama.cpp", "This model is not a decision model"),
        ("ollama", "model 'llama3.2' is not a decision model"),
    ],
)
def test_a_501_is_named_as_such_and_never_retried(dialect, message):
    recorder = dialects.Recorder()
    judge = judge_on(dialect, recorder, retries=3, t={"unsupported": True})
    with pytest.raises(JudgeRefused) as caught:
        judge.choose(PROMPT, ["Yes", "No"])
    model = dialects.MODELS[dialect]["data"][0]["id"]
    assert (
        str(caught.value)
        == f"server http://server:8000 does not serve decisions for model {model}: 501 {message}"
    )
    assert sum(1 for _, path, _ in recorder.requests if path == "/v1/systemone") == 1


@pytest.mark.parametrize("dialect", ["vllm", "llama.cpp", "ollama"])
def test_an_option_limit_is_a_one_line_refusal_of_that_pair(dialect):
    judge = judge_on(dialect)
    with pytest.raises(RemoteJudgeError) as caught:
        judge.choose(PROMPT, [f"label {i}" for i in range(300)])
    assert not isinstance(caught.value, JudgeRefused | JudgeUnavailable)  # one pair's error
    assert caught.value.one_line().startswith("server http://server:8000 refused the request: 400 ")
    assert "\n" not in caught.value.one_line()


def test_a_server_without_chat_completions_cannot_write_text():
    judge = judge_on("ollama", t={"chat": False})
    with pytest.raises(NoTextGeneration, match="has no chat completions: 404 404 page not found"):
        judge.generate(PROMPT, 20)
    recorder = dialects.Recorder()
    free = judge_on("vllm", recorder).generate(PROMPT, 20, regex="[a-z]+")  # G-Eval steps' way
    assert free.text == "billing" and "anvil" not in recorder.requests[-1][2]
    with pytest.raises(RemoteJudgeError, match="needs a local judge"):
        judge_on("vllm").likelihood(PROMPT, "text")


class Flaky:
    """A server that fails `fails` times (a status, or a dropped connection), then answers."""

    def __init__(self, fails: list, retry_after: str | None = None) -> None:
        self.fails = list(fails)
        self.calls = 0
        self.retry_after = retry_after

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json=dialects.MODELS["vllm"])
        self.calls += 1
        if self.fails:
            failure = self.fails.pop(0)
            if isinstance(failure, int):
                headers = {"Retry-After": self.retry_after} if self.retry_after else {}
                return httpx.Response(
                    failure,
                    json={"detail": {"message": "busy", "error_type": "overloaded"}},
                    headers=headers,
                )
            raise failure
        body = json.loads(request.content)
        answers = {q: dialects.answer("vllm", v) for q, v in body["questions"].items()}
        return httpx.Response(
            200, json={"model": "m", "answers": answers, "usage": {"input_tokens": 1}}
        )


def flaky_judge(server: Flaky, retries: int) -> RemoteJudge:
    spec = RemoteSpec("http://flaky:1", retries=retries)
    return RemoteJudge(
        spec, client=httpx.Client(transport=httpx.MockTransport(server), base_url=spec.url)
    )


def test_429_503_and_dropped_connections_are_retried(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr("anvil_local.judge.remote.time.sleep", slept.append)
    server = Flaky(
        [429, 503, httpx.ConnectError("reset"), httpx.ReadTimeout("slow")], retry_after="3"
    )
    result = flaky_judge(server, retries=4).choose(PROMPT, ["Yes", "No"])
    assert result.probabilities == pytest.approx((0.8, 0.2))
    assert server.calls == 5
    assert slept == [3.0, 6.0, 12.0, 24.0]  # Retry-After first, then doubling


def test_past_its_retries_a_server_is_unavailable_in_one_line(monkeypatch):
    monkeypatch.setattr("anvil_local.judge.remote.time.sleep", lambda s: None)
    server = Flaky([503] * 10)
    with pytest.raises(JudgeUnavailable) as caught:
        flaky_judge(server, retries=2).choose(PROMPT, ["Yes", "No"])
    assert (
        str(caught.value) == "decision server http://flaky:1 did not answer after 3 tries: 503 busy"
    )
    assert server.calls == 3


@pytest.mark.parametrize(
    ("status", "kind", "message"),
    [
        (
            401,
            JudgeRefused,
            "server http://flaky:1 refused the key (401 busy): set ANVIL_JUDGE_KEY",
        ),
        (404, JudgeRefused, "server http://flaky:1 does not serve model Qwen/Qwen3-0.6B: 404 busy"),
        (422, RemoteJudgeError, "server http://flaky:1 refused the request: 422 busy"),
    ],
)
def test_401_404_422_are_not_retried(status, kind, message):
    server = Flaky([status])
    with pytest.raises(kind) as caught:
        flaky_judge(server, retries=3).choose(PROMPT, ["Yes", "No"])
    assert str(caught.value) == message and server.calls == 1


def test_an_anvil_server_that_changes_its_judge_is_refused():
    identity = {"model": "m", "sha256": "a" * 64, "n_ctx": 4096}
    echoed = dict(identity)

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "m", "identity": identity}]})
        answers = {
            "q": {
                "type": "choice",
                "choice": "Yes",
                "probabilities": {"Yes": 0.9, "No": 0.1},
                "confidence": 0.8,
            }
        }
        return httpx.Response(
            200,
            json={
                "model": "m",
                "answers": answers,
                "usage": {"input_tokens": 5},
                "anvil": {"identity": echoed},
            },
        )

    spec = RemoteSpec("http://anvil:8000", retries=0)
    judge = RemoteJudge(
        spec, client=httpx.Client(transport=httpx.MockTransport(handle), base_url=spec.url)
    )
    assert judge.verbatim and judge.model.sha256 == "a" * 64
    assert judge.choose(PROMPT, ["Yes", "No"]).probabilities == (0.9, 0.1)
    echoed["sha256"] = "b" * 64  # the server was restarted on another file
    with pytest.raises(RemoteJudgeError, match="answered as another judge than the run's"):
        judge.choose(PROMPT, ["Yes", "No"])


def test_a_constrained_text_that_does_not_finish_is_a_generation_error():
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(
                200, json={"data": [{"id": "m", "identity": {"sha256": "c" * 64}}]}
            )
        detail = {
            "message": "constrained output did not complete within 5 tokens: '{\"a'...; raise max_tokens",
            "error_type": "invalid_request",
        }
        return httpx.Response(422, json={"detail": detail})

    spec = RemoteSpec("http://anvil:8000", retries=0)
    judge = RemoteJudge(
        spec, client=httpx.Client(transport=httpx.MockTransport(handle), base_url=spec.url)
    )
    with pytest.raises(
        GenerationError, match=r"^constrained output did not complete within 5 tokens"
    ):
        judge.generate(PROMPT, 5, schema={"type": "object"})


def test_spec_strings_name_one_server_or_several(monkeypatch):
    assert remote_specs("http://a:8000") == (RemoteSpec("http://a:8000"),)
    two = remote_specs("http://a:8000,http://b:9000/#judge")
    assert [s.url for s in two] == ["http://a:8000", "http://b:9000"] and {
        s.model for s in two
    } == {"judge"}
    assert remote_specs("smollm2-135m-instruct") == ()
    monkeypatch.delenv("ANVIL_MODEL", raising=False)
    monkeypatch.setenv("ANVIL_JUDGE_URL", "http://c:1, http://d:2")
    monkeypatch.setenv("ANVIL_JUDGE_MODEL", "m")
    assert [(s.url, s.model) for s in remote_specs(None)] == [
        ("http://c:1", "m"),
        ("http://d:2", "m"),
    ]
    monkeypatch.setenv("ANVIL_MODEL", "smollm2-135m-instruct")
    with pytest.raises(Exception, match="set ANVIL_MODEL or ANVIL_JUDGE_URL, not both"):
        remote_specs(None)
    with pytest.raises(RemoteJudgeError, match="a judge URL is http"):
        RemoteSpec.parse("ftp://x")


def test_a_catalogue_entry_of_kind_remote(tmp_path, monkeypatch):
    from anvil_local.models.catalogue import entries, user_catalogue_dir

    folder = user_catalogue_dir()
    folder.mkdir(parents=True)
    (folder / "gpu-box.toml").write_text(
        'name = "gpu-box"\nkind = "remote"\nurls = ["http://gpu1:8000", "http://gpu2:8000"]\n'
        'model = "smollm2-135m-faithful"\nkey_env = "GPU_BOX_KEY"\ntimeout = 30\nconcurrency = 4\n'
    )
    specs = remote_specs("gpu-box")
    assert [s.url for s in specs] == ["http://gpu1:8000", "http://gpu2:8000"]
    assert {(s.model, s.key_env, s.timeout, s.concurrency) for s in specs} == {
        ("smollm2-135m-faithful", "GPU_BOX_KEY", 30, 4)
    }
    assert "gpu-box" not in [e.name for e in entries()]  # not a model file


def test_a_task_node_on_a_server_without_chat_completions_names_the_node_and_the_way_out():
    from anvil_local import (
        BinaryJudgementNode,
        DAGMetric,
        DeepAcyclicGraph,
        LLMTestCase,
        SingleTurnParams,
        TaskNode,
        VerdictNode,
    )

    judge = judge_on("ollama", t={"chat": False})
    check = BinaryJudgementNode(
        criteria="Are there three headings?",
        children=[VerdictNode(False, score=0), VerdictNode(True, score=10)],
    )
    task = TaskNode(
        instructions="List the headings.",
        output_label="headings",
        evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT],
        children=[check],
    )
    metric = DAGMetric("Headings", DeepAcyclicGraph([task]), include_reason=False)
    with pytest.raises(NoTextGeneration) as caught:
        metric.measure(LLMTestCase(input="x", actual_output="Intro\nBody"), judge)
    line = caught.value.one_line()
    assert "needs text, and server http://server:8000 has no chat completions: 404" in line
    assert line.endswith(
        "make it a code_task node, or judge on a server with /v1/chat/completions (anvil serve has one)"
    )
    assert line.startswith("task node '")


def test_a_server_lost_after_the_others_finished_still_has_its_work_done(monkeypatch):
    """Two servers; one answers at once, the other drops its connection (after the first
    has finished its own group): its group goes back to the queue, and the first server,
    waiting while groups are still in flight, judges it."""
    import threading
    import time

    from anvil_local import (
        BinaryJudgementNode,
        DAGMetric,
        DeepAcyclicGraph,
        LLMTestCase,
        SingleTurnParams,
        VerdictNode,
    )
    from anvil_local.run.evaluate import evaluate

    monkeypatch.setattr("anvil_local.judge.remote.time.sleep", lambda s: None)
    first_done, a_asked = threading.Event(), threading.Event()
    calls = {"http://a:1": 0, "http://b:2": 0}

    def handler(url: str):
        def handle(request: httpx.Request) -> httpx.Response:
            if request.url.path == "/v1/models":
                return httpx.Response(200, json={"data": [{"id": "m"}]})
            calls[url] += 1
            if url == "http://a:1":
                a_asked.set()
                first_done.wait(5)
                raise httpx.ConnectError("connection reset by peer")
            a_asked.wait(5)  # both servers hold a group before either answers
            body = json.loads(request.content)
            answers = {q: dialects.answer("vllm", v) for q, v in body["questions"].items()}
            first_done.set()
            time.sleep(0.05)
            return httpx.Response(
                200, json={"model": "m", "answers": answers, "usage": {"input_tokens": 3}}
            )

        return handle

    real_client = httpx.Client

    def client(**kw):
        return real_client(
            transport=httpx.MockTransport(handler(kw["base_url"])), base_url=kw["base_url"]
        )

    monkeypatch.setattr(httpx, "Client", client)
    node = BinaryJudgementNode(
        criteria="Is it fine?",
        children=[VerdictNode(False, score=0), VerdictNode(True, score=10)],
        evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT],
    )
    metric = DAGMetric("Fine", DeepAcyclicGraph([node]), include_reason=False)
    cases = [LLMTestCase(input=f"input {i}", actual_output="output", id=f"c{i}") for i in range(2)]
    outcome = evaluate(cases, [metric], model="http://a:1,http://b:2#m", use_cache=False)
    assert sorted(x.case_id for x in outcome.lines) == ["c0", "c1"]
    assert all(x.result.error is None for x in outcome.lines)
    assert calls["http://a:1"] == 5 and calls["http://b:2"] == 2  # a: its tries; b: both cases
