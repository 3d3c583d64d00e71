"""Every text a G-Eval prompt holds, as constants and `str.format` templates.

The texts are part of every cache key and of the measured scores: a change here is a change
of the metric, never a refactor. The modules that build prompts only choose and fill these.
"""

from __future__ import annotations

# -- steps generation (see steps.py) ---------------------------------------------------

#: The block the steps prompt shows: the criteria alone.
STEPS_CRITERIA = "Criteria:\n{criteria}\n\n"
#: The steps prompt's question; `fields` as `fields_phrase` writes them.
STEPS_QUESTION = (
    "Turn these criteria into 3 or 4 numbered steps for a judge checking "
    "{fields}. Each step must check something different."
)

#: The cue after a template's own steps prompt (`evaluation_template=`).
STEPS_CUE = "Evaluation steps, numbered, one per line:"

# -- a definition: criteria, steps, rubric ---------------------------------------------

#: The title of a single metric's definition block.
DEFINITION_TITLE = "Evaluation criteria ({name}):"
#: The title of one member's block in a panel's prompts.
MEMBER_TITLE = "Metric: {name}"
STEPS_HEADING = "Evaluation steps:"
STEP_LINE = "{number}. {step}"
RUBRIC_HEADING = "Rubric:"
#: The last line of a single metric's definition block.
TASK_LINE = "Task: {task}"

# -- the scale: a score range or a strict Yes/No verdict -------------------------------

#: A single metric's task (stated before the case's own fields), on a score range.
SCORE_TASK = (
    "following the evaluation steps, score how well {fields} meet the "
    "criteria, from {lo} (worst) to {hi} (best). Reply with the number only."
)
#: ... and as a strict verdict.
VERDICT_TASK = (
    "following the evaluation steps, decide whether {fields} fully meet "
    "the criteria. Reply with Yes or No only."
)
#: The cue after the case: alone, and as a member of a panel (naming the member).
SCORE_CUE = "Score ({lo} to {hi}):"
VERDICT_CUE = "Verdict (Yes or No):"
MEMBER_SCORE_CUE = "{name} score ({lo} to {hi}):"
MEMBER_VERDICT_CUE = "{name} verdict (Yes or No):"
#: The line a panel member's block ends with when its scale is not shown by a rubric.
MEMBER_SCALE = "Scale: {lo} (worst) to {hi} (best)."
MEMBER_VERDICT = "Answer: Yes or No."

# -- a panel's task, after every member's definition -----------------------------------

_PANEL_LEAD = "Task: following the evaluation steps of the metric named at the end, "
_PANEL_SCORE = "score the test case below on that metric"
#: Every member a strict verdict.
PANEL_TASK_VERDICTS = (
    _PANEL_LEAD + "decide whether the test case below fully meets that metric's criteria. "
    "Reply with Yes or No only.\n\n"
)
#: Some members a strict verdict, some a score.
PANEL_TASK_MIXED = (
    _PANEL_LEAD + _PANEL_SCORE + ", from the lowest to the highest score of its scale "
    "(Yes or No where the metric says so). Reply with the number, or Yes or No, only.\n\n"
)
#: Every member a score; `scale` is "rubric" when every member has one, else
#: "rubric or scale".
PANEL_TASK_SCORES = (
    _PANEL_LEAD + _PANEL_SCORE + ", from the lowest to the highest score of its {scale}. "
    "Reply with the number only.\n\n"
)
PANEL_SCALE_RUBRIC = "rubric"
PANEL_SCALE_MIXED = "rubric or scale"

# -- the reason, asked after the score is fixed ----------------------------------------

SCORE_SUMMARY = "score {weighted:.2f} on {lo}-{hi}"
VERDICT_SUMMARY = "verdict {verdict} (P(Yes) = {p_yes:.3f})"
REASON_QUESTION = (
    "The evaluation gave {summary}. In one or two sentences, give the reason for "
    "this result, referring to the evaluation steps."
)
