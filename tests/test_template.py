"""Chat-template splitting (pure: no model)."""

from anvil_local.judge.template import SYSTEM_PROMPT, plain_parts, render_parts
from tests.fakes import CHATML

GEMMA_LIKE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{ raise_exception('no system role') }}{% endif %}<start_of_turn>{{ message['role'] }}\n"
    "{{ message['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def test_chatml_splits_around_the_user_message():
    parts = render_parts(CHATML)
    assert parts.source == "gguf"
    assert parts.head == f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n"
    assert parts.tail == "<|im_end|>\n<|im_start|>assistant\n"


def test_template_that_rejects_a_system_role_falls_back_to_plain():
    assert render_parts(GEMMA_LIKE) == plain_parts()


def test_missing_or_broken_template_falls_back_to_plain():
    assert render_parts(None).source == "plain"
    assert render_parts("{% for %}").source == "plain"
