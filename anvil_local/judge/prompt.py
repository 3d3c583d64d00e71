"""What the judge is asked: shared blocks first, the node's question last.

The blocks are the part many calls share (fixed instructions, then the test case, then task
outputs), so consecutive calls on one case reuse the model's KV cache up to the question.
Each block is tokenized on its own: a case's tokens never depend on what came before it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The first user block of every prompt: fixed, metric-independent, shared by all calls.
HEADER = (
    "You are judging the test case below. Read it, then answer the question at the end "
    "exactly in the form asked.\n\n"
)


@dataclass(frozen=True)
class Prompt:
    """A judge prompt: `blocks` (shared prefix, in order) then `question` (the varying tail)."""

    blocks: tuple[str, ...]
    question: str
    case_id: str | None = None

    def text(self) -> str:
        """The user message as plain text (for display and hashing)."""
        return "".join(self.blocks) + self.question
