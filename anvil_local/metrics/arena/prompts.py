"""Every text an Arena G-Eval prompt holds (a change here is a change of the metric).

The definition carries no metric name, so the same criteria judged with and without
debiasing read the same prompt for the declared order.
"""

from __future__ import annotations

DEFINITION_TITLE = "Evaluation criteria:"
#: The task, after the steps; `fields` names what differs between the contestants.
TASK = (
    "Task: following the evaluation steps, decide which contestant's {fields} best meets "
    "the criteria. Reply with the contestant's letter only."
)
#: A contestant's heading; its own fields follow.
CONTESTANT = "Contestant {letter}:\n"
#: The cue after the contestants; `letters` as "A or B", "A, B or C".
CUE = "Best contestant ({letters}):"
REASON_QUESTION = (
    "The evaluation chose Contestant {letter} (probability {probability:.2f}). In one or two "
    "sentences, give the reason for this choice, referring to the evaluation steps."
)
