"""ArenaTestCase and Contestant: several outputs for one input, judged for a winner.

Names and rules follow DeepEval 4.x: contestant names are unique, and every contestant's
test case has the same input and the same expected output (what they compete on).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from anvil_local.errors import DataError
from anvil_local.testcase import LLMTestCase, SingleTurnParams, refuse_flags

#: The keys an arena's dict (a case file's line) may hold besides metadata.
ARENA_FIELDS = ("id", "name", "contestants", "tags", "metadata")


@dataclass
class Contestant:
    """One competitor: its name (how the result names the winner) and its test case.
    `hyperparameters` (the model, prompt or settings that produced it) are kept, never
    judged."""

    name: str
    test_case: LLMTestCase
    hyperparameters: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise DataError("a contestant needs a non-empty name")
        if isinstance(self.test_case, dict):
            self.test_case = LLMTestCase.from_dict(self.test_case)
        if not isinstance(self.test_case, LLMTestCase):
            raise DataError(
                f"contestant {self.name!r}: test_case must be an LLMTestCase, "
                f"got {type(self.test_case).__name__}"
            )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "test_case": self.test_case.to_dict()}
        if self.hyperparameters is not None:
            data["hyperparameters"] = self.hyperparameters
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Contestant:
        if isinstance(data, Contestant):
            return data
        if not isinstance(data, dict) or "name" not in data or "test_case" not in data:
            raise DataError("each contestant is an object with a 'name' and a 'test_case'")
        unknown = sorted(set(data) - {"name", "test_case", "hyperparameters"})
        if unknown:
            raise DataError(f"unknown contestant field(s): {', '.join(unknown)}")
        return cls(**data)


@dataclass
class ArenaTestCase:
    """Two or more contestants on the same input and expected output."""

    contestants: list[Contestant]
    multimodal: bool = False
    id: str | None = None
    name: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = field(default=None)

    def __post_init__(self) -> None:
        refuse_flags("ArenaTestCase", multimodal=self.multimodal)
        if not isinstance(self.contestants, list) or len(self.contestants) < 2:
            raise DataError("an arena needs a list of at least two contestants")
        self.contestants = [Contestant.from_dict(c) for c in self.contestants]
        names = [c.name for c in self.contestants]
        if len(names) != len(set(names)):
            raise DataError("All contestant names must be unique.")
        cases = [c.test_case for c in self.contestants]
        if any(c.input != cases[0].input for c in cases[1:]):
            raise DataError("All contestants must have the same 'input'.")
        if any(c.expected_output != cases[0].expected_output for c in cases[1:]):
            raise DataError("All contestants must have the same 'expected_output'.")

    @property
    def label(self) -> str | None:
        return self.id if self.id is not None else self.name

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.contestants]

    def has(self, param: Any) -> bool:
        """Every contestant's case has the field."""
        return all(c.test_case.has(param) for c in self.contestants)

    def shared_fields(self) -> list[Any]:
        """What every contestant shares (the input, the expected output): the scheduler
        groups arenas by it, so arenas on one document read it once."""
        first = self.contestants[0].test_case
        return [first.input, first.expected_output]

    def own_fields(self) -> list[Any]:
        shared = {SingleTurnParams.INPUT, SingleTurnParams.EXPECTED_OUTPUT}
        return [
            [c.name, *(c.test_case.get(p) for p in SingleTurnParams if p not in shared)]
            for c in self.contestants
        ]

    def content_key(self) -> str:
        """sha256 of the judged content: the contestants, by name and case, in order."""
        payload = [[c.name, c.test_case.content_key()] for c in self.contestants]
        blob = json.dumps(payload, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ARENA_FIELDS:
            value = getattr(self, name)
            if name == "contestants":
                value = [c.to_dict() for c in self.contestants]
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArenaTestCase:
        unknown = sorted(set(data) - set(ARENA_FIELDS) - {"multimodal"})
        if unknown:
            raise DataError(f"unknown arena field(s): {', '.join(unknown)}")
        return cls(**data)
