"""RemoteJudge: the judge's primitives asked of a System One decision server over HTTP.

A metric never knows whether its judge is local or remote: both answer `choose`, `score` and
`generate` with the same result types. Two dialects:

- **anvil serve** (its `/v1/models` cards carry an `identity`): the prompt travels verbatim
  in the declared private extension (`anvil`: blocks, question, options), the server answers
  with its own `Judge.choose` / `Judge.generate`, and echoes its identity (model sha256,
  adapter, load settings, llama.cpp version). Over the same file and build the answers are
  the in-process judge's. An answer from another identity than the one probed at the start is
  refused, so one run never mixes two judges.
- **any other System One server** (vLLM, llama-server, Ollama, hosted): native questions. A
  prompt's blocks become the state and its question the instructions; Yes/No options a
  `noul`, other options a `choice`, a score range a `score` over its values (an ordered
  `choice` past the server's level limit, the expected value computed here). Results then
  differ from in-process by design: the judge's identity is the server's URL and model.

Failures are one line: 401, 404, 422 and 501 are never retried; timeouts, connection resets,
429 and 503 are retried with backoff (Retry-After honoured), then raise `JudgeUnavailable`
(the pair was not judged: a run with other servers moves it there). Likelihoods and hidden
states cannot be asked through System One: a metric that reads them needs a local judge.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

from anvil_local.errors import (
    GenerationError,
    JudgeRefused,
    JudgeUnavailable,
    MissingExtra,
    NoTextGeneration,
    RemoteJudgeError,
)
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.options import argmax_first, checked_options
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.results import Ask, ChoiceResult, GenerationResult, ScoreResult, Usage
from anvil_local.judge.settings import JudgeSettings

log = logging.getLogger(__name__)

#: The environment variable that holds a decision server's key unless an entry names another.
KEY_ENV = "ANVIL_JUDGE_KEY"
YES_NO = ("Yes", "No")
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: Questions in one request: the least any server takes (vLLM's cap; anvil serve's default).
MAX_QUESTIONS = 64


@dataclass(frozen=True)
class RemoteSpec:
    """Where a remote judge is and how to talk to it. `model` None: the server's only model
    (or its first, for a server listing several). `max_levels`: the most score levels the
    server takes (the spec's 10; past it a score is asked as an ordered choice)."""

    url: str
    model: str | None = None
    key_env: str = KEY_ENV
    timeout: float = 120.0
    concurrency: int = 1
    retries: int = 4
    max_levels: int = 10
    # what an anvil server said it is when the run resolved it (sorted items): every later
    # connection, and every answer, must say the same
    identity: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, text: str, model: str | None = None, **kw: Any) -> RemoteSpec:
        """A URL, with the model as its fragment if `model` is not given:
        `http://gpu-box:8000#smollm2-135m-faithful`."""
        base, _, fragment = text.strip().partition("#")
        try:
            parts = urlsplit(base)
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise RemoteJudgeError(f"a judge URL is http(s)://host[:port], got {text!r}")
        return cls(base.rstrip("/"), model or fragment or None, **kw)

    def label(self) -> str:
        return f"{self.url}#{self.model}" if self.model else self.url


def is_url(spec: Any) -> bool:
    return isinstance(spec, str) and spec.strip().startswith(("http://", "https://"))


def _message(response: Any) -> str:
    """The one-line message of an error body, in any dialect's shape (System One's
    `detail.message`, OpenAI's and llama.cpp's `error.message`, Ollama's `error`)."""
    try:
        body = response.json()
    except ValueError:
        return " ".join(response.text.split())[:200] or response.reason_phrase
    if isinstance(body, dict):
        for key in ("detail", "error"):
            value = body.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, dict) and isinstance(value.get("message"), str):
                return value["message"]
            if isinstance(value, list) and value and isinstance(value[0], dict):
                return str(value[0].get("msg", value[0]))
        if isinstance(body.get("message"), str):
            return body["message"]
    return " ".join(str(body).split())[:200]


class RemoteJudge:
    """A judge whose primitives are answered by a decision server (see the module
    docstring). The metrics of one case may ask it from several threads (`judge/rounds.py`):
    its HTTP client is shared, its usage counted under a lock."""

    def __init__(
        self, spec: RemoteSpec, client: Any = None, expected: ResolvedModel | None = None
    ) -> None:
        """Probe the server (its models, its identity). With `expected` (the identity a run
        resolved), a server now serving another judge is refused."""
        try:
            import httpx
        except ImportError:
            raise MissingExtra(
                "a remote judge needs httpx: pip install 'anvil-local[remote]'"
            ) from None
        self.spec = spec
        key = os.environ.get(spec.key_env, "").strip()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = client or httpx.Client(
            base_url=spec.url, timeout=spec.timeout, headers=headers
        )
        self.usage = Usage()
        self._counting = threading.Lock()
        self.identity: dict[str, Any] | None = None
        try:
            self.server_model = self._probe()
            self.model = self._resolved()
            if expected is not None:
                self._check(expected)
                self.model = expected
        except BaseException:
            self._http.close()
            raise

    def _check(self, expected: ResolvedModel) -> None:
        """Refuse a server that is not the judge the run resolved: over anvil serve, the
        whole identity (model, adapter, settings, build) must match; elsewhere the model."""
        first = expected.remote[0] if expected.remote else None
        if self.identity is not None:
            same = first is not None and _items(self.identity) == first.identity
        else:
            same = first is not None and self.server_model == first.model
        if not same:
            raise JudgeRefused(
                f"server {self.spec.url} serves another judge than the run's: "
                f"{self.model.name} ({_short(self.identity or self.server_model)}), not "
                f"{expected.name}"
            )

    # -- what the server is ------------------------------------------------------------------

    @property
    def verbatim(self) -> bool:
        """Whether the server is anvil serve (the prompt travels verbatim)."""
        return self.identity is not None

    def _probe(self) -> str:
        """The model to ask for, and the server's identity for it where it reports one."""
        response = self._request("GET", "/v1/models", None, what="list its models")
        try:
            listed = response.json()
            cards = listed.get("data") or listed.get("models") or []
        except (ValueError, AttributeError):
            raise JudgeRefused(
                f"{self.spec.url} is not a decision server: GET /v1/models answered "
                f"{_short(response.text)}"
            ) from None
        names = [c.get("id") or c.get("name") for c in cards if isinstance(c, dict)]
        wanted = self.spec.model or (names[0] if names else None)
        if wanted is None:
            raise JudgeRefused(f"{self.spec.url} lists no model; name one (--judge-model)")
        if names and wanted not in names:
            raise JudgeRefused(
                f"{self.spec.url} does not serve model {wanted!r}; it serves: {', '.join(names)}"
            )
        card = next((c for c in cards if (c.get("id") or c.get("name")) == wanted), {})
        if isinstance(card.get("identity"), dict):
            self.identity = card["identity"]
        return wanted

    def _resolved(self) -> ResolvedModel:
        """The judge's identity as a run records it. Over anvil serve, the served model's own
        sha256 (the same judge as in-process, so results and caches agree); elsewhere a hash
        of the server and the model, so `anvil compare` sees a judge change."""
        if self.identity is not None:
            sha = str(self.identity["sha256"])
        else:
            sha = hashlib.sha256(f"remote:{self.spec.url}#{self.server_model}".encode()).hexdigest()
        return ResolvedModel(
            name=f"{self.server_model}@{self.spec.url}",
            path=self.spec.url,
            sha256=sha,
            settings=JudgeSettings(n_ctx=int((self.identity or {}).get("n_ctx", 4096))),
            remote=(
                dataclasses.replace(
                    self.spec, model=self.server_model, identity=_items(self.identity or {})
                ),
            ),
        )

    # -- transport -------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: Any, what: str = "answer") -> Any:
        """One request, retried on 429/502/503/504, timeouts and connection errors. Past the
        retries, a server that refuses connections or is overloaded (429, 503) is
        unavailable (a run moves its work to other servers); one that is up but too slow
        for this request (a timeout, 504, 502) fails this request only."""
        import httpx

        delay = 0.5
        last, down = "", False
        for attempt in range(self.spec.retries + 1):
            try:
                response = self._http.request(method, path, json=body)
            except httpx.TimeoutException:
                last, down = f"no answer within {self.spec.timeout:g} s", False
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                last, down = reason, True
            else:
                status = response.status_code
                if status < 400:
                    return response
                if status not in RETRY_STATUSES:
                    raise self._refusal(response, what)
                last, down = f"{status} {_message(response)}", status in (429, 503)
                after = response.headers.get("retry-after")
                if after and after.strip().isdigit():
                    delay = max(delay, min(float(after), 30.0))
            if attempt < self.spec.retries:
                log.info("%s: %s; retrying in %.1f s", self.spec.url, last, delay)
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
        tries = self.spec.retries + 1
        message = f"decision server {self.spec.url} did not {what} after {tries} tries: {last}"
        raise JudgeUnavailable(message) if down else RemoteJudgeError(message)

    def _refusal(self, response: Any, what: str) -> RemoteJudgeError:
        status = response.status_code
        model = getattr(self, "server_model", None) or self.spec.model or "its default"
        message = _message(response)
        if status in (404, 405, 501) and what == "generate text":
            return NoTextGeneration(
                f"server {self.spec.url} has no chat completions: {status} {message}"
            )
        if status == 501:
            return JudgeRefused(
                f"server {self.spec.url} does not serve decisions for model {model}: 501 {message}"
            )
        if status in (401, 403):
            return JudgeRefused(
                f"server {self.spec.url} refused the key ({status} {message}): set "
                f"{self.spec.key_env}"
            )
        if status in (404, 405) and what != "answer":
            return JudgeRefused(f"server {self.spec.url} cannot {what}: {status} {message}")
        if status == 404:
            return JudgeRefused(
                f"server {self.spec.url} does not serve model {model}: 404 {message}"
            )
        return RemoteJudgeError(f"server {self.spec.url} refused the request: {status} {message}")

    def _post(self, path: str, body: dict[str, Any], what: str = "answer") -> tuple[Any, Usage]:
        """POST, check the identity an anvil server echoes, and read what it cost."""
        start = time.perf_counter()
        response = self._request("POST", path, body, what)
        data = response.json()
        if self.identity is not None:
            echoed = (data.get("anvil") or {}).get("identity")
            if echoed != self.identity:
                raise JudgeRefused(
                    f"server {self.spec.url} answered as another judge than the run's "
                    f"(now {_short(echoed)}, at the start {_short(self.identity)}): "
                    "restart the run, or serve the same model and build"
                )
        usage = _usage(data, response.headers)
        with self._counting:
            self.usage = self.usage + usage
        log.debug("%s %s in %.3f s", self.spec.url, path, time.perf_counter() - start)
        return data, usage

    # -- primitives --------------------------------------------------------------------------

    def choose(self, prompt: Prompt, options: Sequence[str]) -> ChoiceResult:
        return cast(ChoiceResult, self.decide([Ask(prompt, tuple(options))])[0])

    def score(self, prompt: Prompt, lo: int, hi: int) -> ScoreResult:
        """The distribution over lo..hi: over anvil serve exactly as in-process (a choice
        over the values' digits); elsewhere a score question over the values as levels, or an
        ordered choice past the server's level limit."""
        return cast(ScoreResult, self.decide([Ask(prompt, scale=(lo, hi))])[0])

    def decide(self, asks: Sequence[Ask]) -> list[ChoiceResult | ScoreResult]:
        """Answer several questions with as few requests as the API allows: over anvil serve
        all of them in one request (each with its verbatim prompt); elsewhere one request
        per distinct state (a prompt's blocks), its questions together, so the server reads
        each state once. At most `MAX_QUESTIONS` a request. Results come back in the order
        asked; a request's usage is counted on its first question's result."""
        for ask in asks:
            if ask.scale is not None and ask.scale[0] > ask.scale[1]:
                raise ValueError(f"empty score range {ask.scale[0]}..{ask.scale[1]}")
        batches: dict[str, list[int]] = {}
        for i, ask in enumerate(asks):
            state = "" if self.verbatim else "".join(ask.prompt.blocks)
            batches.setdefault(state, []).append(i)
        results: list[ChoiceResult | ScoreResult | None] = [None] * len(asks)
        for state, indices in batches.items():
            for at in range(0, len(indices), MAX_QUESTIONS):
                chunk = indices[at : at + MAX_QUESTIONS]
                answered = self._send(state, [asks[i] for i in chunk])
                for i, result in zip(chunk, answered, strict=True):
                    results[i] = result
        return [r for r in results if r is not None]

    def _send(self, state: str, asks: list[Ask]) -> list[ChoiceResult | ScoreResult]:
        """One request for `asks` (sharing `state`), its answers read into results."""
        start = time.perf_counter()
        ids = ["q"] if len(asks) == 1 else [f"q{n}" for n in range(1, len(asks) + 1)]
        questions: dict[str, dict[str, Any]] = {}
        readers = []
        for qid, ask in zip(ids, asks, strict=True):
            question, read = self._question(ask)
            questions[qid] = question
            readers.append(read)
        body: dict[str, Any] = {"model": self.server_model, "state": state, "questions": questions}
        if self.verbatim:
            body["anvil"] = {
                "prompts": {
                    qid: {"blocks": list(ask.prompt.blocks), "question": ask.prompt.question}
                    for qid, ask in zip(ids, asks, strict=True)
                }
            }
        data, usage = self._post("/v1/systemone", body)
        seconds = time.perf_counter() - start
        out = []
        for n, (qid, read) in enumerate(zip(ids, readers, strict=True)):
            out.append(read(_answer(data, qid), usage if n == 0 else Usage(), seconds))
        return out

    def _question(self, ask: Ask) -> tuple[dict[str, Any], Any]:
        """The wire question for `ask` and how to read its answer into a result."""
        question = ask.prompt.question
        if ask.scale is not None:
            lo, hi = ask.scale
            values = [str(v) for v in range(lo, hi + 1)]
            if self.verbatim or len(values) > self.spec.max_levels:
                wire, read = self._question(Ask(ask.prompt, tuple(values)))

                def as_score(answer: dict[str, Any], usage: Usage, seconds: float) -> ScoreResult:
                    picked = read(answer, usage, seconds)
                    return ScoreResult(lo, hi, picked.probabilities, usage, seconds)

                return wire, as_score

            def score(answer: dict[str, Any], usage: Usage, seconds: float) -> ScoreResult:
                table = answer["probabilities"]
                probs = tuple(float(table[str(i)]) for i in range(len(values)))
                return ScoreResult(lo, hi, probs, usage, seconds)

            return {"type": "score", "instructions": question, "criteria": values}, score
        labels, stripped = checked_options(ask.options)
        if not self.verbatim and stripped == list(YES_NO):
            wire: dict[str, Any] = {"type": "noul", "instructions": question}

            def probs_of(answer: dict[str, Any]) -> list[float]:
                p = float(answer["noul"])
                return [p, 1.0 - p]
        else:  # over anvil serve the labels as the prompt has them; elsewhere stripped
            names = labels if self.verbatim else tuple(stripped)
            wire = {"type": "choice", "criteria": dict.fromkeys(names)}
            if not self.verbatim:
                wire["instructions"] = question

            def probs_of(answer: dict[str, Any]) -> list[float]:
                table = answer["probabilities"]
                return [float(table[name]) for name in names]

        def choice(answer: dict[str, Any], usage: Usage, seconds: float) -> ChoiceResult:
            probs = probs_of(answer)
            return ChoiceResult(labels, tuple(probs), argmax_first(probs), usage, seconds)

        return wire, choice

    def generate(
        self,
        prompt: Prompt,
        max_tokens: int,
        schema: dict[str, Any] | None = None,
        regex: str | None = None,
        stop: Sequence[str] = (),
    ) -> GenerationResult:
        """Greedy text through the server's chat completions (see `Judge.generate`)."""
        start = time.perf_counter()
        body: dict[str, Any] = {
            "model": self.server_model,
            "messages": [{"role": "user", "content": prompt.text()}],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        if stop:
            body["stop"] = list(stop)
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema},
            }
        if self.verbatim:
            extension: dict[str, Any] = {
                "prompt": {"blocks": list(prompt.blocks), "question": prompt.question}
            }
            if regex is not None:
                extension["regex"] = regex
            body["anvil"] = extension
        elif regex is not None:  # G-Eval steps: their text is parsed either way
            log.info("%s takes no regular expression: the text is generated free", self.spec.url)
        try:
            data, usage = self._post("/v1/chat/completions", body, what="generate text")
        except RemoteJudgeError as exc:
            text = str(exc)
            if "constrained output did not complete" in text:
                raise GenerationError(
                    text.split(": 422 ", 1)[-1].removesuffix("; raise max_tokens")
                ) from None
            raise
        choice = data["choices"][0]
        tokens = int((data.get("usage") or {}).get("completion_tokens") or 0)
        return GenerationResult(
            choice["message"]["content"] or "",
            tokens,
            choice.get("finish_reason") == "stop",
            usage,
            time.perf_counter() - start,
        )

    def likelihood(self, prompt: Prompt, continuation: str) -> Any:
        raise JudgeRefused(
            "likelihood readings cannot be asked through System One: this metric needs a "
            "local judge (--model NAME|PATH)"
        )

    def hidden_state(self, prompt: Prompt) -> Any:
        raise JudgeRefused(
            "hidden states cannot be asked through System One: this metric needs a local "
            "judge (--model NAME|PATH)"
        )

    def decode_choice(self, prompt: Prompt, options: Sequence[str]) -> str:
        raise RemoteJudgeError(
            "the decode check needs a local judge: a decision server returns probabilities"
        )

    def close(self) -> None:
        self._http.close()


def _answer(data: dict[str, Any], qid: str) -> dict[str, Any]:
    try:
        return data["answers"][qid]
    except (KeyError, TypeError):
        raise RemoteJudgeError(
            f"a decision server answered without answer {qid!r}: {_short(data)}"
        ) from None


def _usage(data: dict[str, Any], headers: Any) -> Usage:
    """Tokens of one answer: the body's input tokens, and what an anvil server says it
    evaluated and reused (a server that does not say: everything evaluated). The run's
    prompt trie is not known here (the server sees one request at a time): left at 0, so
    reports leave it out."""
    body = data.get("usage") or {}
    prompt = int(body.get("input_tokens") or body.get("prompt_tokens") or 0)
    evaluated = int(headers.get("x-anvil-evaluated-tokens", prompt))
    reused = int(headers.get("x-anvil-reused-tokens", 0))
    return Usage(prompt, reused, evaluated, 1, 0)


def _items(identity: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(identity.items()))


def _short(value: Any) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= 120 else text[:117] + "..."


def resolve_remote(specs: Sequence[RemoteSpec]) -> ResolvedModel:
    """One judge on one or more decision servers: each is probed now (a server that is down
    or serves another model is one line before any work), and all must be the same judge:
    anvil servers the same identity (model sha256, adapter, settings, build), other servers
    the same model name (their identity is then the model name and the servers' URLs)."""
    if not specs:
        raise RemoteJudgeError("no decision server given")
    probed: list[RemoteJudge] = []
    for spec in specs:
        judge = RemoteJudge(spec)
        judge.close()
        probed.append(judge)
    first = probed[0]
    for other in probed[1:]:
        same = (
            other.identity == first.identity
            if first.identity is not None
            else other.identity is None and other.server_model == first.server_model
        )
        if not same:
            raise RemoteJudgeError(
                f"the decision servers serve different judges: {first.model.name} and "
                f"{other.model.name} ({_short(other.identity or other.server_model)})"
            )
    servers = tuple(j.model.remote[0] for j in probed)
    name = first.model.name + (f" (+{len(servers) - 1} servers)" if len(servers) > 1 else "")
    sha = first.model.sha256
    if first.identity is None and len(servers) > 1:
        urls = ",".join(s.url for s in servers)
        sha = hashlib.sha256(f"remote:{urls}#{first.server_model}".encode()).hexdigest()
    return dataclasses.replace(first.model, name=name, sha256=sha, remote=servers)


def remote_judge(
    url: str,
    model: str | None = None,
    *,
    key_env: str = KEY_ENV,
    timeout: float = 120.0,
    concurrency: int = 1,
) -> RemoteJudge:
    """A judge answered by the decision server at `url` (anvil serve, vLLM, llama-server,
    Ollama, a hosted one), accepted wherever a model is: `GEval(model=...)`,
    `DAGMetric(model=...)`, `evaluate(..., model=...)`, `metric.measure(case, judge)`."""
    spec = RemoteSpec.parse(url, model, key_env=key_env, timeout=timeout, concurrency=concurrency)
    return RemoteJudge(spec)


__all__ = ["KEY_ENV", "RemoteJudge", "RemoteSpec", "is_url", "remote_judge"]
