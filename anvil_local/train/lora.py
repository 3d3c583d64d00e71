"""`anvil train lora`: a LoRA adapter for the judge, trained on the CPU from its own GGUF.

The base is the GGUF file the judge runs (dequantized by transformers), so the adapter is fitted
to the weights llama.cpp will apply it to. Each row of the training file is the metric's
question as token ids; the loss is the cross-entropy of the right option among the options,
each option's probability read as the metric reads it (the sequence view: an option's tokens'
log-probabilities summed, renormalised over the options).

Training resumes: every `checkpoint_every` steps the adapter, the optimizer's moments and the
position in the data are written (atomically) to the output folder, and every step appends one
line to `loss.jsonl`. `--resume` continues from there, on the same data file (its sha256 is
checked), to the same result as an uninterrupted run up to float summation order. A stop asked
for by time (`max_minutes`), by step count or by Ctrl-C writes a checkpoint first.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from anvil_local import signals
from anvil_local.errors import DataError, MissingExtra
from anvil_local.train.data import ROW_VERSION
from anvil_local.train.sources import file_sha256

log = logging.getLogger(__name__)

#: The projections of each transformer block that carry an adapter.
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
STATE = "state.json"
LOSS = "loss.jsonl"
ADAPTER = "adapter"  # a PEFT adapter folder (adapter_config.json + safetensors)
OPTIMIZER = "optimizer.pt"


def parse_targets(text: str) -> tuple[str, ...]:
    """`all` or a comma-separated list of projections, kept in the block's order (so the same
    choice written two ways is the same config)."""
    if text.strip() == "all":
        return TARGETS
    asked = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in asked if t not in TARGETS]
    if unknown or not asked:
        raise DataError(
            f"--targets {text!r}: choose from {', '.join(TARGETS)} (comma-separated) or all"
        )
    return tuple(t for t in TARGETS if t in asked)


@dataclass
class TrainConfig:
    """Everything that decides the result: stored with the checkpoint and checked on resume."""

    rank: int = 8
    alpha: int = 16
    lr: float = 2e-4
    warmup: int = 20
    accumulate: int = 8  # rows per optimizer step (one row a forward pass: no padding)
    max_tokens: int = 448  # longer rows are skipped
    seed: int = 0
    targets: tuple[str, ...] = TARGETS
    val_rows: int = 64
    val_every: int = 50


@dataclass
class TrainState:
    config: TrainConfig
    data_sha256: str
    base_sha256: str
    step: int = 0
    rows_done: int = 0  # rows of the training split consumed, in file order
    tokens: int = 0
    seconds: float = 0.0
    finished: bool = False
    history: list[dict[str, float]] = field(default_factory=list)  # validation points
    #: the run this one started from (`--init`): its folder, step and adapter's sha256
    init: dict[str, Any] | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> TrainState:
        raw = json.loads(text)
        raw["config"] = TrainConfig(**{**raw["config"], "targets": tuple(raw["config"]["targets"])})
        return cls(**raw)


def require_torch() -> Any:
    try:
        import peft  # noqa: F401
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(
            f"training needs the train extra ({exc.name} is missing): "
            "pip install 'anvil-local[train]'"
        ) from None
    return torch


def read_rows(path: Path, split: str) -> list[dict[str, Any]]:
    """The rows of one split, in file order, checked for the schema this trainer reads."""
    if not path.is_file():
        raise DataError(f"{path}: no such training file (`anvil train data` writes one)")
    found = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise DataError(f"{path}:{number}: not JSON") from None
            if not isinstance(row, dict) or row.get("version") != ROW_VERSION:
                raise DataError(
                    f"{path}:{number}: not a training row of version {ROW_VERSION} "
                    "(`anvil train data` writes them)"
                )
            if row.get("split") == split:
                found.append(row)
    return found


def load_base(model_path: Path, dtype: Any = None) -> Any:
    """The judge's GGUF as a torch causal LM (transformers dequantizes it)."""
    torch = require_torch()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    return AutoModelForCausalLM.from_pretrained(
        str(model_path.parent), gguf_file=model_path.name, dtype=dtype or torch.float32
    )


def with_adapter(base: Any, config: TrainConfig, adapter_dir: Path | None = None) -> Any:
    from peft import LoraConfig, PeftModel, get_peft_model

    if adapter_dir is not None:
        return PeftModel.from_pretrained(base, str(adapter_dir), is_trainable=True)
    lora = LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        target_modules=list(config.targets),
        lora_dropout=0.0,
        bias="none",
        init_lora_weights=True,
    )
    return get_peft_model(base, lora)


def option_logprobs(model: Any, row: dict[str, Any]) -> Any:
    """log P(option | prompt) of each option as the metric reads it, renormalised over the
    options (a tensor with a gradient)."""
    torch = require_torch()
    tokens = row["tokens"]
    options = row["option_tokens"]
    device = model.device
    if all(len(o) == 1 for o in options):
        ids = torch.tensor([tokens], device=device)
        logits = model(input_ids=ids, logits_to_keep=1).logits[0, -1]
        scores = torch.log_softmax(logits.float(), -1)[[o[0] for o in options]]
    else:  # one pass per option: its tokens' log-probabilities summed
        parts = []
        for option in options:
            ids = torch.tensor([tokens + option[:-1]], device=device)
            logits = model(input_ids=ids, logits_to_keep=len(option)).logits[0]
            logp = torch.log_softmax(logits.float(), -1)
            picked = logp[
                torch.arange(len(option), device=device), torch.tensor(option, device=device)
            ]
            parts.append(picked.sum())
        scores = torch.stack(parts)
    return scores - torch.logsumexp(scores, 0)


def _lr(step: int, config: TrainConfig) -> float:
    """Linear warm-up, then constant: the rate never depends on how long training will run,
    so a run extended across sessions is the run it would have been."""
    return config.lr * min(1.0, (step + 1) / max(config.warmup, 1))


def _started_from(
    init: Path, config: TrainConfig, base_sha: str
) -> tuple[TrainConfig, dict[str, Any]]:
    """A new run's settings when it starts from run `init`'s adapter: that adapter's rank,
    alpha and projections (the rest as given), and what to record of where it started."""
    state_path, weights = init / STATE, init / ADAPTER / "adapter_model.safetensors"
    if not state_path.is_file() or not weights.is_file():
        raise DataError(f"{init}: not a run folder of `anvil train lora` (no {STATE} or adapter)")
    earlier = TrainState.from_json(state_path.read_text())
    if earlier.base_sha256 != base_sha:
        raise DataError(f"{init}: trained for another base model than this run's")
    shape = earlier.config
    config = replace(config, rank=shape.rank, alpha=shape.alpha, targets=shape.targets)
    return config, {"run": str(init), "step": earlier.step, "adapter_sha256": file_sha256(weights)}


class Trainer:
    """One training run in an output folder; `run()` trains until told to stop."""

    def __init__(
        self,
        out: Path,
        data: Path,
        base_path: Path,
        config: TrainConfig,
        resume: bool,
        report: Callable[[dict[str, Any]], None] = lambda _: None,
        device: str = "cpu",
        init: Path | None = None,
    ) -> None:
        torch = require_torch()
        self.torch = torch
        self.out = out
        self.report = report
        if not data.is_file():
            raise DataError(f"{data}: no such training file (`anvil train data` writes one)")
        data_sha = file_sha256(data)
        base_sha = file_sha256(base_path)
        state_path = out / STATE
        if resume:
            if not state_path.is_file():
                raise DataError(f"{out}: no checkpoint to resume (no {STATE})")
            self.state = TrainState.from_json(state_path.read_text())
            if self.state.data_sha256 != data_sha:
                raise DataError(
                    f"{data}: not the training file this checkpoint was trained on "
                    f"(sha256 {data_sha[:12]}, checkpoint {self.state.data_sha256[:12]})"
                )
            if self.state.base_sha256 != base_sha:
                raise DataError(f"{base_path}: not the base model this checkpoint was trained on")
            config = self.state.config
        else:
            if state_path.exists():
                raise DataError(f"{out}: holds a checkpoint already (--resume continues it)")
            start = None
            if init is not None:
                config, start = _started_from(init, config, base_sha)
            self.state = TrainState(config, data_sha, base_sha, init=start)
        self.config = config
        torch.manual_seed(config.seed)
        self.rows = read_rows(data, "train")
        self.val = read_rows(data, "val")[: config.val_rows]
        if not self.rows:
            raise DataError(f"{data}: no rows of the train split")
        order = list(range(len(self.rows)))
        random.Random(config.seed).shuffle(order)
        self.order = order
        base = load_base(base_path)
        adapter = out / ADAPTER if resume else init / ADAPTER if init is not None else None
        self.model = with_adapter(base.to(device), config, adapter)
        self.model.train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
        if resume and (out / OPTIMIZER).is_file():
            saved = torch.load(out / OPTIMIZER, weights_only=True, map_location=device)
            for group in saved["state"].values():
                for key, value in group.items():
                    if torch.is_tensor(value) and value.dtype == torch.bfloat16:
                        group[key] = value.float()
            self.optimizer.load_state_dict(saved)
        self._stop = False

    def _rows(self) -> Iterator[dict[str, Any]]:
        """Training rows from where the last run stopped, epoch after epoch."""
        position = self.state.rows_done
        while True:
            row = self.rows[self.order[position % len(self.order)]]
            position += 1
            self.state.rows_done = position
            if len(row["tokens"]) <= self.config.max_tokens:
                yield row

    def validate(self) -> dict[str, float]:
        torch = self.torch
        self.model.eval()
        losses, right = [], 0
        with torch.no_grad():
            for row in self.val:
                logp = option_logprobs(self.model, row)
                losses.append(float(-logp[row["answer"]]))
                right += int(int(torch.argmax(logp)) == row["answer"])
        self.model.train()
        n = max(len(self.val), 1)
        return {"val_loss": sum(losses) / n, "val_accuracy": right / n}

    def run(self, max_steps: int | None, max_minutes: float | None, every: int) -> TrainState:
        torch = self.torch
        started = time.monotonic()
        previous = signal.signal(signal.SIGINT, self._interrupt)
        previous_term = signal.signal(signal.SIGTERM, self._interrupt)
        rows = self._rows()
        steps_here = 0
        try:
            if self.state.step == 0 and not self.state.history and self.val:
                self._record_validation()
            while not self._stop:
                if max_steps is not None and steps_here >= max_steps:
                    break
                if max_minutes is not None and time.monotonic() - started > max_minutes * 60:
                    break
                tick = time.monotonic()
                for group in self.optimizer.param_groups:
                    group["lr"] = _lr(self.state.step, self.config)
                total, right, tokens = 0.0, 0, 0
                for _ in range(self.config.accumulate):
                    row = next(rows)
                    logp = option_logprobs(self.model, row)
                    loss = -logp[row["answer"]] / self.config.accumulate
                    loss.backward()
                    total += float(loss.detach()) * self.config.accumulate
                    right += int(int(torch.argmax(logp.detach())) == row["answer"])
                    tokens += len(row["tokens"])
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.state.step += 1
                steps_here += 1
                self.state.tokens += tokens
                seconds = time.monotonic() - tick
                self.state.seconds += seconds
                point = {
                    "step": self.state.step,
                    "rows": self.state.rows_done,
                    "loss": total / self.config.accumulate,
                    "accuracy": right / self.config.accumulate,
                    "lr": _lr(self.state.step - 1, self.config),
                    "tokens": tokens,
                    "seconds": round(seconds, 3),
                }
                with (self.out / LOSS).open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(point) + "\n")
                self.report(point)
                if self.val and self.state.step % self.config.val_every == 0:
                    self._record_validation()
                if self.state.step % every == 0:
                    self.save()
        finally:
            signal.signal(signal.SIGINT, previous)
            signal.signal(signal.SIGTERM, previous_term)
        self.save()
        return self.state

    def _record_validation(self) -> None:
        point = {"step": self.state.step, "rows": self.state.rows_done, **self.validate()}
        self.state.history.append(point)
        self.report(point)

    def _interrupt(self, sig: int, frame: Any = None) -> None:
        log.warning("stopping after this step; a checkpoint is written first")
        signals.note(sig)
        self._stop = True

    def save(self) -> None:
        """Adapter, optimizer moments (as bfloat16: half the bytes) and state, each written to
        a temporary name and moved into place, the state last: a checkpoint is whole or old."""
        torch = self.torch
        self.out.mkdir(parents=True, exist_ok=True)
        staging = self.out / (ADAPTER + ".partial")
        self.model.save_pretrained(str(staging))
        (staging / "README.md").unlink(missing_ok=True)  # peft's blank hub card: not ours
        target = self.out / ADAPTER
        if target.exists():
            old = self.out / (ADAPTER + ".old")
            target.replace(old)
            staging.replace(target)
            for child in old.iterdir():
                child.unlink()
            old.rmdir()
        else:
            staging.replace(target)
        saved = self.optimizer.state_dict()
        saved["state"] = {
            index: {
                key: value.to(torch.bfloat16)
                if torch.is_tensor(value) and value.is_floating_point() and value.ndim > 0
                else value
                for key, value in moments.items()
            }
            for index, moments in saved["state"].items()
        }
        partial = self.out / (OPTIMIZER + ".partial")
        torch.save(saved, partial)
        partial.replace(self.out / OPTIMIZER)
        state = self.out / (STATE + ".partial")
        state.write_text(self.state.to_json())
        state.replace(self.out / STATE)
