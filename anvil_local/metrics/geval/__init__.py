"""G-Eval: evaluation steps (generated once per definition and model), then a score whose
exact distribution over every integer in the range is read from the logits.

The score is the probability-weighted mean over the whole range, normalised to 0..1. Unlike
DeepEval no token is dropped, multi-digit values ("10") are exact, and steps are generated
once, cached on disk, and can be pinned in the metric file.

The package, from the ground up: `prompts` (every text a prompt holds), `rubric`, `steps`,
`trace`, `definition` (DeepEval's rules), `scale` (a score range or a strict verdict),
`template` (DeepEval's template classes), `layout` (a metric alone, a panel member or a
template's own prompt), `shared` (what GEval and ConversationalGEval set up alike), `panel`
(the panel's rules) and `metric` (GEval, choosing its scale and layout once).
"""

from anvil_local.metrics.geval.metric import GEval, geval_panel
from anvil_local.metrics.geval.rubric import Rubric, normalise, score_range, sort_rubric
from anvil_local.metrics.geval.steps import STEPS_PROMPT_VERSION, STEPS_REGEX, parse_steps
from anvil_local.metrics.geval.template import (
    ArenaGEvalTemplate,
    ConversationalGEvalTemplate,
    GEvalTemplate,
)
from anvil_local.metrics.geval.trace import GEvalTrace

__all__ = [
    "STEPS_PROMPT_VERSION",
    "STEPS_REGEX",
    "ArenaGEvalTemplate",
    "ConversationalGEvalTemplate",
    "GEval",
    "GEvalTemplate",
    "GEvalTrace",
    "Rubric",
    "geval_panel",
    "normalise",
    "parse_steps",
    "score_range",
    "sort_rubric",
]
