"""Evaluation steps: generated once per definition and model (grammar-constrained to a
numbered list), kept under a key that names everything the steps depend on."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from anvil_local.cache import digest
from anvil_local.errors import GenerationError
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.geval.prompts import STEPS_CRITERIA, STEPS_CUE, STEPS_QUESTION
from anvil_local.metrics.geval.template import (
    ConversationalGEvalTemplate,
    GEvalTemplate,
    overrides,
    render,
)
from anvil_local.metrics.layout import fields_phrase
from anvil_local.testcase import SingleTurnParams

log = logging.getLogger(__name__)

#: Part of every steps key: raise it when the steps prompt changes, so no stored steps of
#: the old prompt are read back.
STEPS_PROMPT_VERSION = "2"
_STEP = r"[^\n]{8,150}"
#: Three or four numbered steps, each one line of 8-150 characters.
STEPS_REGEX = rf"1\. {_STEP}\n2\. {_STEP}\n3\. {_STEP}(\n4\. {_STEP})?"
#: Room for four steps of 150 characters and their numbers.
STEPS_MAX_TOKENS = 700


def parse_steps(text: str) -> list[str]:
    """Steps from "1. ...\\n2. ..." text."""
    steps = []
    for line in text.splitlines():
        match = re.match(r"\s*\d+\.\s*(.+)", line)
        if match and match.group(1).strip():
            steps.append(match.group(1).strip())
    return steps


def steps_key(model_sha256: str, criteria: str | None, params: Sequence[SingleTurnParams]) -> str:
    """What generated steps are kept under: the prompt's version, the model file, the
    criteria and the fields they are for."""
    return digest("steps", STEPS_PROMPT_VERSION, model_sha256, criteria, [p.value for p in params])


def steps_prompt(
    criteria: str, params: Sequence[SingleTurnParams], template: type | None = None
) -> Prompt:
    """The prompt that asks the judge for steps: the criteria, then the request (or the
    text of a template that replaces `generate_evaluation_steps`, then a short cue)."""
    return templated_steps_prompt(criteria, fields_phrase(params), template) or Prompt(
        (STEPS_CRITERIA.format(criteria=criteria.strip()),),
        STEPS_QUESTION.format(fields=fields_phrase(params)),
    )


def templated_steps_prompt(criteria: str, fields: str, template: type | None) -> Prompt | None:
    """The steps prompt of a template that overrides `generate_evaluation_steps` (the
    steps grammar still makes the answer a numbered list); None for the default."""
    method = "generate_evaluation_steps"
    if template is None or not all(
        overrides(template, method, base) for base in (GEvalTemplate, ConversationalGEvalTemplate)
    ):
        return None
    text = render(template, method, criteria=criteria.strip(), parameters=fields, multimodal=False)
    return Prompt((text.rstrip() + "\n\n",), STEPS_CUE)


def templated_steps_key(key: str, criteria: str, fields: str, template: type | None) -> str:
    """A steps key that also names a template's own steps prompt, when it has one."""
    prompt = templated_steps_prompt(criteria, fields, template) if criteria else None
    return key if prompt is None else digest(key, prompt.text())


def ask_for_steps(
    session: JudgeSession,
    name: str,
    criteria: str,
    params: Sequence[SingleTurnParams],
    template: type | None = None,
) -> list[str]:
    """Ask the judge for 3-4 evaluation steps; none that parse is an error naming the
    metric (`name`), never an empty list."""
    result = session.generate(
        steps_prompt(criteria, params, template), max_tokens=STEPS_MAX_TOKENS, regex=STEPS_REGEX
    )
    steps = parse_steps(result.text)
    if not steps:
        raise GenerationError(
            f"the judge wrote no evaluation steps for {name!r}; pin evaluation_steps in the metric"
        )
    log.info("generated %d evaluation steps for %s", len(steps), name)
    return steps
