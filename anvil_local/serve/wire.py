"""The wire shapes of every endpoint, as pydantic models.

Requests are strict: unknown fields are refused (so a misspelt field never silently changes
an evaluation) and no value is coerced from another type. Responses are built from these
models and serialised the same way every time, so one request gives the same bytes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: What the spec calls an instruction value: text, or any JSON array or object.
Content = str | dict[str, Any] | list[Any]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# -- System One: POST /v1/systemone --------------------------------------------------------


class NoulCriteria(Strict):
    true: Content | None = None
    false: Content | None = None


class NoulQuestion(Strict):
    type: Literal["noul"]
    instructions: Content | None = None
    criteria: NoulCriteria | None = None


class ChoiceQuestion(Strict):
    type: Literal["choice"]
    instructions: Content | None = None
    criteria: dict[str, Content | None]


class ScoreQuestion(Strict):
    type: Literal["score"]
    instructions: Content | None = None
    criteria: list[Content]


class BoxQuestion(Strict):
    """Known to the official client; refused here (a text judge locates nothing in images)."""

    type: Literal["box"]
    instructions: Content | None = None


Question = Annotated[
    NoulQuestion | ChoiceQuestion | ScoreQuestion | BoxQuestion, Field(discriminator="type")
]


class VerbatimPrompt(Strict):
    """A judge prompt as anvil's metrics lay it out: blocks (tokenized one by one), then the
    question."""

    blocks: list[str]
    question: str


class AnvilExtension(Strict):
    """The declared private extension anvil's own remote judge sends (docs/serve.md): each
    question's prompt verbatim, so a metric judged remotely reads exactly the tokens it reads
    in-process. Its questions are choices whose labels are the options."""

    prompts: dict[str, VerbatimPrompt]


class SystemOneRequest(Strict):
    """`state` is the field the official client sends; the v1 draft calls it `document`."""

    model: str
    state: Content | None = None
    document: Content | None = None
    questions: dict[str, Question]
    assets: dict[str, Any] | None = None  # images: refused, with a reason
    anvil: AnvilExtension | None = None


class NoulAnswer(BaseModel):
    type: Literal["noul"] = "noul"
    noul: float


class ChoiceAnswer(BaseModel):
    type: Literal["choice"] = "choice"
    choice: str
    probabilities: dict[str, float]
    confidence: float


class ScoreAnswer(BaseModel):
    type: Literal["score"] = "score"
    score: float
    probabilities: dict[str, float]
    confidence: float
    legend: dict[str, Content]


class Usage(BaseModel):
    """Tokens of the request's prompts, each position counted once (the state once for all
    questions); nothing is generated, so `output_tokens` is 0."""

    input_tokens: int
    output_tokens: int = 0


class SystemOneResponse(BaseModel):
    model: str
    answers: dict[str, NoulAnswer | ChoiceAnswer | ScoreAnswer]
    usage: Usage
    anvil: dict[str, Any] | None = None  # with the extension: the judge's identity


# -- the OpenAI-shaped variant: POST /v1/decisions ------------------------------------------


class TextPart(Strict):
    type: Literal["text"]
    text: str


class DecisionChoice(Strict):
    value: str
    description: str | None = None


class DecisionLevel(Strict):
    label: str
    description: str | None = None


class DecisionQuestion(Strict):
    type: Literal["predicate", "choice", "score"]
    name: str
    instructions: str | None = None
    choices: list[DecisionChoice] | None = None
    levels: list[DecisionLevel] | None = None


class DecisionsRequest(Strict):
    model: str
    input: str | list[TextPart]
    questions: list[DecisionQuestion]


class DecisionAnswer(BaseModel):
    """One answer, in question order, echoing its name: `probability` (P(true)) for a
    predicate; `value`, `probabilities` and `confidence` for a choice; `score` (the expected
    level), `probabilities` by level and `confidence` for a score."""

    name: str
    type: str
    probability: float | None = None
    value: str | None = None
    score: float | None = None
    probabilities: dict[str, float] | None = None
    confidence: float | None = None


class DecisionsResponse(BaseModel):
    object: Literal["decision"] = "decision"
    model: str
    answers: list[DecisionAnswer]
    usage: Usage


# -- chat completions: POST /v1/chat/completions (minimal) ----------------------------------


class ChatMessage(Strict):
    role: Literal["system", "user", "assistant"]
    content: str | list[TextPart]


class JsonSchemaFormat(Strict):
    name: str | None = None
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None
    description: str | None = None


class ResponseFormat(Strict):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class ChatExtension(Strict):
    """The private extension for anvil's remote judge: the prompt verbatim (it replaces the
    messages' text) and a regular expression the answer must match."""

    prompt: VerbatimPrompt
    regex: str | None = None


class ChatRequest(Strict):
    """Greedy and non-streaming: sampling settings are accepted only at their greedy values."""

    model: str
    messages: list[ChatMessage]
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    response_format: ResponseFormat | None = None
    temperature: float | int | None = None
    top_p: float | int | None = None
    n: int | None = None
    stream: bool | None = None
    seed: int | None = None
    anvil: ChatExtension | None = None


class ChatChoiceMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class ChatChoice(BaseModel):
    index: int = 0
    message: ChatChoiceMessage
    finish_reason: Literal["stop", "length"]


class ChatUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatResponse(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int = 0  # a constant: the body is a function of the request alone
    model: str
    choices: list[ChatChoice]
    usage: ChatUsage
    anvil: dict[str, Any] | None = None  # with the extension: the judge's identity


# -- models and health --------------------------------------------------------------------


class ModelCard(BaseModel):
    """One served model, in both listings' terms: OpenAI's (`id`, `object`, `owned_by`) and
    the System One client's (`name`, `description`, `release_date`)."""

    id: str
    object: Literal["model"] = "model"
    owned_by: str = "anvil-local"
    name: str
    description: str
    release_date: str = ""
    sha256: str
    adapter: str | None = None
    n_ctx: int
    identity: dict[str, Any]


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]
    models: list[ModelCard]
