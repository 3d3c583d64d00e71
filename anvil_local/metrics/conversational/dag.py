"""ConversationalDAGMetric: DeepEval's DAG over a conversation, walked as a DAGMetric is.

Every node's prompt opens with the same conversation block (the conversation-level fields
any node looks at, then the turns), so a case's nodes read the conversation once and each
node costs only its question. A node with a `turn_window` reads only those turns; its block
is the conversation's up to the first turn of the window, so a window from the first turn
still shares the whole prefix.
"""

from __future__ import annotations

from typing import Any, ClassVar

from anvil_local.conversation import ConversationalTestCase, window_fits
from anvil_local.errors import DataError
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.conversational.layout import conversation_blocks
from anvil_local.metrics.dag.metric import DAGMetric, _JudgeAsker, visible_blocks
from anvil_local.metrics.dag.walk import Visible
from anvil_local.registry import register_metric


class ConversationAsker(_JudgeAsker):
    """Turns walk requests into judge calls on one conversation; a node's window picks the
    turns its prompt shows."""

    def __init__(
        self,
        case: ConversationalTestCase,
        session: JudgeSession,
        params: list[Any],
        decode_check: bool = False,
    ) -> None:
        self.case = case
        self._judge = session
        self.params = params
        self.decode_check = decode_check
        self.blocks = conversation_blocks(case, params)

    def _prompt(self, visible: Visible, question: str, node: Any = None) -> Prompt:
        window = getattr(node, "turn_window", None)
        if window is None:
            blocks = self.blocks
        else:
            blocks = conversation_blocks(self.case, self.params, window)
        return Prompt(blocks + visible_blocks(visible), question, self.case.label)


@register_metric("conversational_dag")
class ConversationalDAGMetric(DAGMetric):
    """DeepEval's ConversationalDAGMetric: a DAGMetric whose graph holds conversational
    nodes and whose test cases are conversations."""

    title = "conversational DAG metric"
    multiturn: ClassVar[bool] = True
    case_type: ClassVar[type] = ConversationalTestCase

    def asker(self, case: Any, session: JudgeSession) -> ConversationAsker:
        return ConversationAsker(case, session, self.dag.evaluation_params(), self.decode_check)

    def check_case(self, case: Any) -> None:
        """Every node's window lies inside the conversation."""
        for node in self.dag.order:
            window = getattr(node, "turn_window", None)
            if not window_fits(window, case):
                raise DataError(
                    f"node {self.dag.node_id(node)!r} reads turns {window[0]}-{window[1]} "
                    f"(turn_window, from 0) but the conversation has {len(case.turns)} turns"
                )

    def run(self, case: Any, session: Any, *, include_reason: bool | None = None) -> Any:
        self.check_case(case)
        return super().run(case, session, include_reason=include_reason)
