"""The only package that touches llama.cpp and outlines (imported lazily, on model load)."""

from anvil_local.judge.judge import Judge
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.judge.results import ChoiceResult, GenerationResult, ScoreResult, Usage
from anvil_local.judge.session import JudgeSession, as_session, get_judge, open_session
from anvil_local.judge.settings import JudgeSettings

__all__ = [
    "HEADER",
    "ChoiceResult",
    "GenerationResult",
    "Judge",
    "JudgeSession",
    "JudgeSettings",
    "Prompt",
    "ResolvedModel",
    "ScoreResult",
    "Usage",
    "as_session",
    "get_judge",
    "open_session",
]
