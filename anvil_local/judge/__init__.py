"""The only package that touches llama.cpp and outlines (imported lazily, on model load)."""

from anvil_local.judge.judge import Judge, ModelInfo, get_judge
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.judge.results import ChoiceResult, GenerationResult, ScoreResult, Usage
from anvil_local.judge.settings import JudgeSettings

__all__ = [
    "HEADER",
    "ChoiceResult",
    "GenerationResult",
    "Judge",
    "JudgeSettings",
    "ModelInfo",
    "Prompt",
    "ScoreResult",
    "Usage",
    "get_judge",
]
