"""Arena G-Eval: DeepEval's ArenaGEval, the winner among an ArenaTestCase's contestants with
every contestant's probability read from the logits and the position bias averaged out.

The package: `orders` (which orders are judged, and how they combine), `prompts`, `trace`
and `metric`.
"""

from anvil_local.metrics.arena.metric import ArenaGEval
from anvil_local.metrics.arena.orders import combine, orders
from anvil_local.metrics.arena.trace import ArenaTrace

__all__ = ["ArenaGEval", "ArenaTrace", "combine", "orders"]
