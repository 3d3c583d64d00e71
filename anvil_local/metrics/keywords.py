"""DeepEval's constructor keywords that a local judge reads its own way.

A DeepEval metric ports by changing its imports, so every keyword DeepEval's constructors
take is accepted here. Those that cannot change a local result (how DeepEval schedules its
API calls, logs, names or retries a metric) are kept on the metric and do nothing; those
that ask for something a local text judge cannot do (a second model, an audio model) are
refused in one line that says why. docs/porting.md lists both.
"""

from __future__ import annotations

from typing import Any

from anvil_local.errors import UnsupportedFeature

#: Keyword -> why it changes nothing here (the table in docs/porting.md).
NO_EFFECT: dict[str, str] = {
    "async_mode": "the judge runs in this process; `jobs=` and executors parallelise",
    "verbose_mode": "the trace records every prompt and probability",
    "top_logprobs": "the exact distribution over every allowed score is read from the logits",
    "flaky": "DeepEval's test runner marks a flaky metric; a local judge is deterministic",
    "_include_g_eval_suffix": "the metric's name is what results show",
    "_include_dag_suffix": "the metric's name is what results show",
}

#: DeepEval's `measure` keyword -> why it changes nothing here.
MEASURE_NO_EFFECT: dict[str, str] = {
    "_show_indicator": "DeepEval's progress indicator; a local measure shows none",
    "_in_component": "DeepEval's tracing of a metric inside a traced component",
    "_log_metric_to_confident": "DeepEval logs to its cloud; nothing leaves this machine",
}

#: What a local text judge reads: the reason a refused keyword gives.
TEXT_ONLY = "this judge reads text only"


def refuse(owner: str, keyword: str, value: Any, allowed: tuple[Any, ...], why: str) -> None:
    """Raise UnsupportedFeature unless `value` is one of `allowed` (DeepEval's default first)."""
    if not any(value is a or (a is not None and value == a) for a in allowed):
        raise UnsupportedFeature(f"{owner}: {keyword}={value!r} is not supported: {why}")


def refuse_dag_models(owner: str, system_one_model: Any, eval_mode: Any) -> None:
    """A DAG metric's System One keywords: the local judge answers every node."""
    refuse(
        owner,
        "system_one_model",
        system_one_model,
        (None,),
        "one local judge answers every node",
    )
    refuse(owner, "eval_mode", eval_mode, (None, "llm"), "one local judge answers every node")


class DeepEvalMeasure:
    """`measure` taking DeepEval's keywords (`metric.measure(case, _show_indicator=False)`
    is how DeepEval's own code calls it); see MEASURE_NO_EFFECT."""

    def measure(
        self,
        test_case: Any,
        judge: Any = None,
        *,
        _show_indicator: bool = True,
        _in_component: bool = False,
        _log_metric_to_confident: bool = True,
    ) -> float:
        return super().measure(test_case, judge)  # type: ignore[misc]
