"""The model card and catalogue entry `anvil train convert --register` writes (no torch, no
model: a made-up run state and a two-row training file)."""

from __future__ import annotations

import json
from pathlib import Path

from anvil_local.models.catalogue import ModelEntry
from anvil_local.train.lora import TrainConfig, TrainState
from anvil_local.train.ship import write_entry

BASE = ModelEntry(
    name="tiny-base", file="tiny.gguf", sha256="b" * 64, size=1, licence="MIT", format="Q4_1"
)


def _register(tmp_path: Path, init: dict | None) -> str:
    adapter = tmp_path / "adapter.gguf"
    adapter.write_bytes(b"GGUF" + b"\0" * 12)
    data = tmp_path / "rows.jsonl"
    row = {"source": "labelled", "repo": "me", "commit": "", "licence": "mine", "split": "train"}
    data.write_text(json.dumps(row) + "\n" + json.dumps({**row, "split": "val"}) + "\n")
    state = TrainState(TrainConfig(), "d" * 64, "b" * 64, step=7, rows_done=56, init=init)
    entry, card = write_entry("tiny-judge", BASE, adapter, state, data, "A tiny judge")
    assert entry.name == "tiny-judge.toml" and "steps over 56 rows" in entry.read_text()
    return card.read_text()


def test_a_card_says_which_run_an_init_run_started_from(tmp_path: Path):
    init = {"run": "benchmarks/training/faithful-lean", "step": 1077, "adapter_sha256": "e3" * 32}
    card = _register(tmp_path, init)
    assert "- Trained: 7 steps of 8 rows (56 rows" in card
    assert (
        "- Started from the adapter of run `faithful-lean` at its step 1077 "
        "(adapter sha256 `e3e3e3e3e3e3…`); the steps above come on top of it"
    ) in card


def test_a_card_of_a_fresh_run_names_no_start(tmp_path: Path):
    assert "Started from" not in _register(tmp_path, None)
