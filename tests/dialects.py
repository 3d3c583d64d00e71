"""Decision servers we cannot start here (vLLM, llama.cpp's llama-server, Ollama), as
stand-ins that replay responses in each one's shape: their model listings, answers (vLLM's
noul carries a confidence; llama-server reports no output tokens), option limits and error
bodies. The shapes are written from what each project documents for its System One support
(gathered in the project's reference notes), not captured from a running server; the
probabilities are fixed values, the same for any question.

`transport(dialect)` is an httpx transport that answers as that server would, and records
every request it got."""

from __future__ import annotations

import json
from typing import Any

import httpx

MODELS = {
    "vllm": {
        "object": "list",
        "data": [
            {"id": "Qwen/Qwen3-0.6B", "object": "model", "owned_by": "vllm", "max_model_len": 40960}
        ],
    },
    "llama.cpp": {
        "object": "list",
        "data": [
            {
                "id": "laya-1b-q8_0.gguf",
                "object": "model",
                "owned_by": "llamacpp",
                "meta": {"n_ctx_train": 8192},
            }
        ],
        "models": [{"name": "laya-1b-q8_0.gguf", "model": "laya-1b-q8_0.gguf"}],
    },
    "ollama": {
        "object": "list",
        "data": [{"id": "nimble:latest", "object": "model", "owned_by": "library"}],
    },
}

#: How each server refuses a model it cannot read decisions from (501).
UNSUPPORTED = {
    "vllm": {
        "object": "error",
        "message": "Structured decisions are supported for Qwen3-family models only",
        "type": "NotImplementedError",
        "param": None,
        "code": 501,
    },
    "llama.cpp": {
        "error": {
            "code": 501,
            "message": "This model is not a decision model",
            "type": "not_supported_error",
        }
    },
    "ollama": {"error": "model 'llama3.2' is not a decision model"},
}

#: How each refuses a question past its option limit (400).
TOO_MANY = {
    "vllm": {
        "object": "error",
        "message": "choice questions take at most 26 options, got 30",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
    "llama.cpp": {
        "error": {
            "code": 400,
            "message": "too many choices: 300 (max 255)",
            "type": "invalid_request_error",
        }
    },
    "ollama": {"error": "choice must have between 2 and 26 options"},
}

LIMITS = {"vllm": 26, "llama.cpp": 255, "ollama": 26}


def answer(dialect: str, question: dict[str, Any]) -> dict[str, Any]:
    """A recorded answer of the question's type, in the dialect's shape."""
    kind = question["type"]
    if kind == "noul":
        body = {"type": "noul", "noul": 0.8}
        if dialect == "vllm":
            body["confidence"] = 0.6  # vLLM's own extra: the chosen share times the label mass
        return body
    if kind == "choice":
        labels = list(question["criteria"])
        first = 0.7 if len(labels) > 1 else 1.0
        probs = {
            label: (first if i == 0 else (1 - first) / (len(labels) - 1))
            for i, label in enumerate(labels)
        }
        return {"type": "choice", "choice": labels[0], "probabilities": probs, "confidence": 0.55}
    levels = len(question["criteria"])
    probs = {str(i): (0.5 if i == levels - 1 else 0.5 / (levels - 1)) for i in range(levels)}
    score = sum(i * p for i, p in enumerate(probs.values()))
    return {"type": "score", "score": score, "probabilities": probs, "confidence": 0.4}


class Recorder:
    """The requests a stand-in received, for the tests to read."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []


def transport(
    dialect: str, recorder: Recorder | None = None, unsupported: bool = False, chat: bool = True
) -> httpx.MockTransport:
    recorder = recorder or Recorder()

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        recorder.requests.append((request.method, request.url.path, body))
        if request.url.path == "/v1/models":
            return httpx.Response(200, json=MODELS[dialect])
        if request.url.path == "/v1/systemone":
            if unsupported:
                return httpx.Response(501, json=UNSUPPORTED[dialect])
            if "anvil" in body:  # a private extension this server does not know
                return httpx.Response(
                    400,
                    json={
                        "error": {
                            "code": 400,
                            "message": "unknown field 'anvil'",
                            "type": "invalid_request_error",
                        }
                    },
                )
            for question in body["questions"].values():
                if question["type"] == "choice" and len(question["criteria"]) > LIMITS[dialect]:
                    return httpx.Response(400, json=TOO_MANY[dialect])
            answers = {qid: answer(dialect, q) for qid, q in body["questions"].items()}
            usage = {
                "input_tokens": 123,
                "output_tokens": 0 if dialect == "llama.cpp" else len(answers),
            }
            return httpx.Response(
                200, json={"model": body["model"], "answers": answers, "usage": usage}
            )
        if request.url.path == "/v1/chat/completions" and chat:
            content = '{"topic": "billing"}' if body.get("response_format") else "billing"
            return httpx.Response(
                200,
                json={
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1765000000,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45},
                },
            )
        if dialect == "ollama":
            return httpx.Response(404, text="404 page not found")
        return httpx.Response(
            404,
            json={"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}},
        )

    return httpx.MockTransport(handle)
