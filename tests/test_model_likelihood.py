"""Likelihood on the real default model equals a direct computation from the logits of cold
evaluations, and the document's tokens are reused between summaries of one document."""

import numpy as np
import pytest

from anvil_local import LLMTestCase
from anvil_local.judge import Prompt
from anvil_local.metrics.layout import case_blocks
from anvil_local.metrics.likelihood import LikelihoodMetric
from anvil_local.testcase import SingleTurnParams

pytestmark = pytest.mark.model

DOC = "The council voted on Tuesday to close the old bridge on Monday for three weeks of repairs."


def direct_logprobs(judge, prompt: Prompt, text: str) -> list[float]:
    """log-softmax of a cold evaluation ending before each token of `text`."""
    tokens = judge.prompt_tokens(prompt)
    answer = judge.runtime.tokenize(text, special=False)
    values = []
    for i, token in enumerate(answer):
        judge.runtime._tokens, judge.runtime._exact = [], 0  # nothing to reuse: cold
        logits, _, _ = judge.runtime.evaluate(tokens + answer[:i])
        row = logits.astype(np.float64)
        top = row.max()
        values.append(float(row[token] - (top + np.log(np.exp(row - top).sum()))))
    return values


def test_likelihood_equals_the_logits_of_cold_evaluations(judge):
    case = LLMTestCase(input=DOC, actual_output="The bridge closes Monday for repairs.")
    prompt = Prompt(case_blocks(case, [SingleTurnParams.INPUT]), "Summarise the Input.")
    result = judge.likelihood(prompt, case.actual_output)
    assert list(result.logprobs) == pytest.approx(
        direct_logprobs(judge, prompt, case.actual_output), abs=1e-5
    )
    assert "".join(result.tokens) == case.actual_output


def test_summaries_of_one_document_reuse_its_tokens(judge):
    metric = LikelihoodMetric("L", task="Summarise the Input.")
    first = metric.run(LLMTestCase(input=DOC, actual_output="The bridge closes."), judge)
    second = metric.run(LLMTestCase(input=DOC, actual_output="Repairs start Monday."), judge)
    assert second.usage.reused_tokens > len(DOC.split())  # the document was not read again
    assert second.usage.evaluated_tokens < first.usage.prompt_tokens / 2
    assert 0 < first.score < 1 and 0 < second.score < 1


def test_min_contrast_is_the_least_supported_token_of_the_two_readings(judge):
    """normalise = "min" with contrast on the real model: the per-token difference of the
    readings with and without the document (each equal to the logits, test above), at its
    minimum."""
    case = LLMTestCase(input=DOC, actual_output="The bridge closes Friday for repairs.")
    task = "Summarise the Input."
    metric = LikelihoodMetric("L", task=task, normalise="min", contrast=True)
    result = metric.run(case, judge)
    with_doc = Prompt(case_blocks(case, [SingleTurnParams.INPUT]), task)
    given = judge.likelihood(with_doc, case.actual_output).logprobs
    alone = judge.likelihood(Prompt(case_blocks(case, []), task), case.actual_output).logprobs
    differences = [g - a for g, a in zip(given, alone, strict=True)]
    weakest = int(np.argmin(differences))
    assert result.trace.weakest == weakest
    assert result.trace.value == differences[weakest]  # the same exact readings
    assert result.score == pytest.approx(1 / (1 + np.exp(-differences[weakest])), abs=1e-9)
    # the value is not the difference of the two minimums
    assert result.trace.value != pytest.approx(min(given) - min(alone), abs=1e-3)


def test_content_only_skips_the_real_tokenizer_s_function_words_and_punctuation(judge):
    """content_only on the real model: the tokens skipped are exactly those of "The", "on"
    and the final ".", and the value is the least supported of the others."""
    case = LLMTestCase(input=DOC, actual_output="The bridge closes on Friday.")
    task = "Summarise the Input."
    metric = LikelihoodMetric("L", task=task, normalise="min", contrast=True, content_only=True)
    result = metric.run(case, judge)
    tokens = result.trace.tokens
    assert "".join(tokens) == case.actual_output
    skipped = {tokens[i].strip() for i in result.trace.skipped}
    assert skipped == {"The", "on", "."}
    with_doc = Prompt(case_blocks(case, [SingleTurnParams.INPUT]), task)
    given = judge.likelihood(with_doc, case.actual_output).logprobs
    alone = judge.likelihood(Prompt(case_blocks(case, []), task), case.actual_output).logprobs
    counted = [i for i in range(len(tokens)) if i not in result.trace.skipped]
    weakest = min(counted, key=lambda i: given[i] - alone[i])
    assert result.trace.weakest == weakest
    assert result.trace.value == given[weakest] - alone[weakest]
