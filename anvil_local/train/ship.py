"""A trained adapter as a catalogue model: its entry (base + adapter file + sha256) and its
model card (data, steps, seed, licences), written beside the GGUF file.

An entry written into the repository's `models/` ships with the package; `anvil models list /
verify` and `anvil doctor` then know it, and `--model NAME` runs the base with the adapter.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from anvil_local.models.catalogue import ModelEntry, sha256_file, shipped_dir, user_catalogue_dir
from anvil_local.train.lora import TrainState
from anvil_local.train.sources import EXCLUDED, SOURCES

#: The rule-made sources, as a model card describes them.
RULES = {
    "rules": "a sentence of a kept document as a supported claim, the same sentence with a "
    "number, date, name or pronoun changed or a negation flipped as an unsupported one "
    "(FactCC's recipe)",
    "extrinsic": "a sentence of a kept document as a supported claim, another made "
    "unsupported by what the document lacks: a name from another document, a number it never "
    "states, or the sentence taken out of the document",
    "attributes": "a sentence of a kept document as a supported claim, another with one "
    "detail the document never states added to it: an age, a title before a name, a "
    "description of a company or club, or a place or time",
}


def data_summary(data_file: Path) -> list[dict[str, Any]]:
    """Rows per source and split, with each source's repository, commit and licence."""
    counts: Counter[tuple[str, str]] = Counter()
    about: dict[str, dict[str, str]] = {}
    with data_file.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            counts[(row["source"], row["split"])] += 1
            about.setdefault(
                row["source"],
                {
                    "repo": row["repo"],
                    "commit": row["commit"],
                    "licence": row["licence"],
                    "metric": row.get("metric") or "examples/small_judge/faithfulness.toml",
                },
            )
    return [
        {
            "source": name,
            **info,
            "train": counts[(name, "train")],
            "val": counts[(name, "val")],
        }
        for name, info in about.items()
    ]


def _toml(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def write_entry(
    name: str,
    base: ModelEntry,
    adapter_file: Path,
    state: TrainState,
    data_file: Path,
    description: str,
) -> tuple[Path, Path]:
    """Write the card `<name>.md` beside `adapter_file` and the catalogue entry
    `<name>.toml`: beside them when that folder is the shipped catalogue (`models/` of a
    checkout: the entry ships), else into the user's catalogue, pointing at the file where it
    is. Returns (entry, card)."""
    adapter_file = adapter_file.resolve()
    folder = adapter_file.parent
    sha = sha256_file(adapter_file)
    size = adapter_file.stat().st_size
    summary = data_summary(data_file)
    card = folder / f"{name}.md"
    shipped = folder == shipped_dir().resolve()
    if shipped:
        entry, card_ref, part = (
            folder / f"{name}.toml",
            card.name,
            f"shipped = {_toml(adapter_file.name)}",
        )
    else:
        user = user_catalogue_dir()
        user.mkdir(parents=True, exist_ok=True)
        entry, card_ref, part = (
            user / f"{name}.toml",
            str(card),
            f"path = {_toml(str(adapter_file))}",
        )
    lines = [
        f"# {description}: a LoRA adapter over {base.name}, loaded by llama.cpp beside it.",
        f"# Model card: {card.name}.",
        f"name = {_toml(name)}",
        f"description = {_toml(description)}",
        f"base = {_toml(base.name)}",
        f"file = {_toml(adapter_file.name)}",
        f"size = {size}",
        f'sha256 = "{sha}"',
        f"licence = {_toml(f'{base.licence} (base); training data: see {card.name}')}",
        'kind = "adapter"',
        f"chat_template = {_toml(base.chat_template)}",
        f"card = {_toml(card_ref)}",
        "default = false",
        *([] if shipped else ["in_place = true"]),
        f"notes = {_toml(f'{state.step} steps over {state.rows_done} rows; see {card.name}')}",
        "",
        "[[parts]]",
        part,
        "",
    ]
    entry.write_text("\n".join(lines), encoding="utf-8")
    card.write_text(
        _card(name, description, base, adapter_file, sha, size, state, summary),
        encoding="utf-8",
    )
    return entry, card


def _card(
    name: str,
    description: str,
    base: ModelEntry,
    adapter_file: Path,
    sha: str,
    size: int,
    state: TrainState,
    summary: list[dict[str, Any]],
) -> str:
    config = state.config
    last = state.history[-1] if state.history else {}
    known = {s.name: s for s in SOURCES}
    rows = [
        f"| {s['source']} | {s['repo']} | {s['commit'][:12] or '-'} | {s['licence']} | "
        f"{s['train']} | {s['val']} |"
        for s in summary
    ]
    about = [f"- {n}: {known[n].about}" for n in (s["source"] for s in summary) if n in known]
    public = any(s["source"] in known or s["source"] in RULES for s in summary)
    excluded = ["Left out:", "", *(f"- {w}: {why}" for w, why in EXCLUDED.items()), ""]
    rules = [f"- {n}: {RULES[n]}" for n in RULES if any(s["source"] == n for s in summary)]
    metrics = list(dict.fromkeys(s.get("metric", "") for s in summary if s.get("metric")))
    validation = (
        f"validation loss {last['val_loss']:.4f}, accuracy {last['val_accuracy']:.3f} at step "
        f"{last['step']} ({config.val_rows} held-out rows)"
        if last
        else "no validation pass"
    )
    return "\n".join(
        [
            f"# {name}",
            "",
            f"{description}. A LoRA adapter for `{base.name}` ({base.format or 'GGUF'}, sha256 "
            f"`{base.sha256}`), trained on that file's own weights (dequantized) and applied by "
            f"llama.cpp over the same file: `--model {name}`.",
            "",
            f"- File: `{adapter_file.name}`, {size} bytes, sha256 `{sha}`",
            f"- Rank {config.rank}, alpha {config.alpha}, on {', '.join(config.targets)}",
            f"- Trained: {state.step} steps of {config.accumulate} rows ({state.rows_done} rows, "
            f"{state.tokens} tokens, {state.seconds / 3600:.2f} h on the CPU), learning rate "
            f"{config.lr} after {config.warmup} warm-up steps, seed {config.seed}; "
            f"{validation}",
            *_init_line(state.init),
            "- Loss: the right option's probability among the metric's options (the verdict "
            f"tokens {' and '.join(f'`{m}`' for m in metrics)} read"
            + ("s)" if len(metrics) == 1 else ")"),
            "",
            "## Data",
            "",
            "| source | repository | commit | licence | train rows | validation rows |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
            *about,
            *rules,
            "",
            "Pairs whose document shares 3 or more hashed word 8-grams with a document of the "
            "evaluation sets (SummEval, QAGS-XSum, SummEdits, both halves) were dropped.",
            "",
            *(excluded if public else []),
        ]
    )


def _init_line(init: dict[str, Any] | None) -> list[str]:
    """The card line of a run that began from another run's adapter (`--init`): its steps come
    on top of that run's, so the card must say whose."""
    if not init:
        return []
    return [
        f"- Started from the adapter of run `{Path(init['run']).name}` at its step {init['step']} "
        f"(adapter sha256 `{init['adapter_sha256'][:12]}…`); the steps above come on top of it"
    ]
