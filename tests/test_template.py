"""Chat-template splitting (pure: no model)."""

import pytest

from anvil_local.judge.reasoning import close_block, open_block
from anvil_local.judge.template import SYSTEM_PROMPT, plain_parts, render_parts
from tests.fakes import CHATML

GEMMA_LIKE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{ raise_exception('no system role') }}{% endif %}<start_of_turn>{{ message['role'] }}\n"
    "{{ message['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

#: Qwen3's switch: thinking off writes an empty think block into the generation prompt.
QWEN3_LIKE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)

#: DeepSeek-R1's distills: the prompt opens <think>, answered turns drop the reasoning.
R1_LIKE = (
    "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}<|User|>{{ m.content }}"
    "{% elif m.role == 'assistant' %}<|Assistant|>{{ m.content }}<|end|>{% else %}"
    "{{ m.content }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|Assistant|><think>\n{% endif %}"
)

#: gpt-oss's shape: the answer goes in a final channel after an analysis message.
HARMONY_LIKE = (
    "{% for m in messages %}<|start|>{{ m.role }}"
    "{% if m.role == 'assistant' %}{% if m.thinking is defined %}<|channel|>analysis<|message|>"
    "{{ m.thinking }}<|end|><|start|>assistant{% endif %}<|channel|>final<|message|>"
    "{{ m.content }}<|return|>{% else %}<|message|>{{ m.content }}<|end|>{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|start|>assistant{% endif %}"
)


def test_chatml_splits_around_the_user_message():
    parts = render_parts(CHATML)
    assert parts.source == "gguf"
    assert parts.head == f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n"
    assert parts.tail == "<|im_end|>\n<|im_start|>assistant\n"
    assert parts.turn_end == "<|im_end|>\n"
    assert not parts.reasoning and parts.thinking_off == ""


def test_template_that_rejects_a_system_role_gets_it_merged_into_the_user_message():
    parts = render_parts(GEMMA_LIKE, bos_token="<bos>")
    assert parts.source == "merged" and parts.reason == "no system role"
    assert parts.head == f"<start_of_turn>user\n{SYSTEM_PROMPT}\n\n"
    assert parts.tail == "<end_of_turn>\n<start_of_turn>model\n"
    assert parts.bos  # written by the template, cut from the head: the judge adds the token
    assert "merged" in parts.describe() and "no system role" in parts.describe()


def test_template_that_drops_the_system_message_gets_it_merged():
    dropping = (
        "{% for m in messages %}{% if m.role == 'user' %}[INST]{{ m.content }}[/INST]"
        "{% endif %}{% endfor %}"
    )
    parts = render_parts(dropping)
    assert parts.source == "merged" and "drops the system" in parts.reason
    assert parts.head == f"[INST]{SYSTEM_PROMPT}\n\n" and parts.tail == "[/INST]"


@pytest.mark.parametrize(
    "template, why",
    [
        pytest.param(None, "carries no chat template", id="none"),
        pytest.param("{% for %}", "does not parse", id="syntax"),
        pytest.param(
            "{{ raise_exception('only tools') }}",
            "cannot render a user turn: only tools",
            id="raises",
        ),
        pytest.param(
            "{% for m in messages %}{{ m.content }}{{ m.content }}{% endfor %}",
            "does not appear exactly once",
            id="user-twice",
        ),
    ],
)
def test_an_unusable_template_falls_back_to_plain_and_says_why(template, why):
    parts = render_parts(template)
    assert parts.source == "plain" and why in parts.reason
    assert parts.head == plain_parts().head and parts.tail == plain_parts().tail
    assert why in parts.describe()


def test_the_renderers_globals_and_filters_are_there():
    template = (
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% if m.role == 'system' %}"
        "{% continue %}{% endif %}{% set ns.n = ns.n + 1 %}{% generation %}[{{ m.role }}]"
        "{% endgeneration %}{{ m.content }}{% if ns.n > 5 %}{% break %}{% endif %}{% endfor %}"
        "{{ {'b': 1, 'a': [1, 2]} | tojson(indent=2, sort_keys=True, separators=(',', ': ')) }}"
        "{{ strftime_now('%Y-%m-%d') }}{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    parts = render_parts(template)
    assert parts.source == "merged"  # the template skips the system message
    assert parts.head == f"[user]{SYSTEM_PROMPT}\n\n"
    assert parts.tail == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}2024-07-26[assistant]'


def test_a_thinking_switch_is_turned_off_and_on():
    parts = render_parts(QWEN3_LIKE)
    assert parts.tail == "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert parts.think_tail == "<|im_end|>\n<|im_start|>assistant\n"
    assert parts.reasoning and "switch" in parts.thinking_off
    assert open_block(parts.tail) is None


def test_an_opened_think_block_is_closed_empty():
    parts = render_parts(R1_LIKE, bos_token="<s>")
    assert parts.tail == "<|Assistant|><think>\n\n</think>\n\n"
    assert parts.think_tail == "<|Assistant|><think>\n"
    assert parts.think_end == "</think>\n\n"
    assert parts.turn_end == "<|end|>" and parts.bos


def test_a_template_without_a_switch_gets_its_own_empty_reasoning_block():
    parts = render_parts(HARMONY_LIKE)
    assert parts.tail == (
        "<|end|><|start|>assistant<|channel|>analysis<|message|><|end|>"
        "<|start|>assistant<|channel|>final<|message|>"
    )
    assert parts.think_tail == "<|end|><|start|>assistant"
    assert parts.think_end == "<|end|><|start|>assistant<|channel|>final<|message|>"
    assert parts.turn_end == "<|return|>"


def test_close_block_writes_the_empty_form():
    assert close_block("<think>\n") == "<think>\n\n</think>\n\n"
    assert close_block("<think>") == "<think></think>"
    assert close_block("no block") == "no block"
    assert open_block("<think></think>") is None
