"""The only package that touches llama.cpp and outlines (imported lazily, on model load)."""

from anvil_local.judge.judge import Judge
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.pool import JudgePool, process_pool
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.judge.results import ChoiceResult, GenerationResult, ScoreResult, Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.judge.settings import JudgeSettings

__all__ = [
    "HEADER",
    "ChoiceResult",
    "GenerationResult",
    "Judge",
    "JudgePool",
    "JudgeSession",
    "JudgeSettings",
    "Prompt",
    "ResolvedModel",
    "ScoreResult",
    "Usage",
    "process_pool",
]
