"""ModelReport: what the judge sees in a GGUF, as `anvil doctor` and `anvil models add`
show it (made by `judge.describe`, carried out of its child process as JSON)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ModelReport:
    """One line each for `anvil doctor` and `anvil models add` (`unfit` set: the model
    cannot judge, and the other fields may be empty)."""

    architecture: str
    unfit: str = ""
    template: str = ""
    source: str = ""  # "gguf", "merged" or "plain"
    thinking: str = ""
    reasoning: bool = False
    end_tokens: str = ""
    ten: str = ""
    yes: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> ModelReport:
        return cls(**json.loads(text))

    def lines(self, thinking_setting: bool | None = None) -> list[tuple[str, str]]:
        """(label, value) rows; `thinking_setting` is the model's catalogue setting."""
        if self.unfit:
            return [("architecture", self.architecture), ("judge", f"cannot judge: {self.unfit}")]
        return [
            ("architecture", self.architecture),
            ("chat template", self.template),
            ("thinking", self._thinking(thinking_setting)),
            ("end-of-turn", self.end_tokens),
            ('"10" tokenizes', self.ten),
            ('" Yes" tokenizes', self.yes),
        ]

    def _thinking(self, setting: bool | None) -> str:
        if not self.reasoning:
            return "no reasoning block (nothing to turn off)"
        if setting:
            return (
                "on for generated text (catalogue: thinking = true); verdicts are read with "
                f"thinking off, by {self.thinking}"
            )
        return (
            f"off, by {self.thinking} (catalogue `thinking = true` turns it on for generated text)"
        )
