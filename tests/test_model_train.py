"""Teaching the real default judge, end to end and tiny: labelled cases -> `anvil train data`
-> `anvil train lora` (resumed once) -> `anvil train convert` -> llama.cpp loads the adapter
beside the Q4_1 base and its verdict logits move; the conversion puts the query and key
weights in llama.cpp's layout (checked against torch on a random adapter); the shipped
adapter is the file its catalogue entry names."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("torch", reason="the train extra is not installed")
pytest.importorskip("peft", reason="the train extra is not installed")

from anvil_local.cli import main
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.settings import JudgeSettings

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
METRIC = ROOT / "examples" / "small_judge" / "faithfulness.toml"

CASES = [
    ("The museum opened in 1998 and has 40 rooms.", "The museum has 40 rooms.", 1),
    ("The museum opened in 1998 and has 40 rooms.", "The museum opened in 2005.", 0),
    ("Anna won the race ahead of Ben.", "Anna won the race.", 1),
    ("Anna won the race ahead of Ben.", "Ben won the race.", 0),
    ("The factory closed after the floods in May.", "The factory closed.", 1),
    ("The factory closed after the floods in May.", "The factory expanded in May.", 0),
    ("Prices rose by 3% last year, the bank said.", "Prices rose last year.", 1),
    ("Prices rose by 3% last year, the bank said.", "Prices fell by 3%.", 0),
]


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _p_yes(judge, row: dict) -> float:
    choice = judge.choose(_prompt_of(judge, row), row["options"])
    return float(choice.probabilities[row["options"].index("Yes")])


def _prompt_of(judge, row: dict) -> Prompt:
    """The row's case as the faithfulness metric asks it (its own prompt, asked again)."""
    from anvil_local.spec import load_metric
    from anvil_local.testcase import LLMTestCase
    from anvil_local.train.render import Renderer

    case = LLMTestCase(input=row["input"], actual_output=row["actual_output"])
    return Renderer(load_metric(METRIC), judge).ask(case)[0]


def test_tiny_training_run_end_to_end(tmp_path: Path, real_data_dir: Path):
    from anvil_local.judge.judge import Judge

    cases = tmp_path / "labelled.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"input": d, "actual_output": c, "labels": {"consistent": y}}) + "\n"
            for d, c, y in CASES
        )
    )
    data = tmp_path / "train.jsonl"
    out = _run("train", "data", "--cases", str(cases), "--out", str(data), "--holdout", "0")
    assert "8 rows written" in out and "labelled | 8 |" in out
    rows = [json.loads(line) for line in data.open()]
    base = ResolvedModel("base", str(real_data_dir), "0" * 64, JudgeSettings(threads=2))
    judge = Judge.load(base)
    try:
        # each row is exactly what the metric sends: its prompt's tokens, its options' tokens
        for row in rows[:2]:
            assert row["tokens"] == judge.prompt_tokens(_prompt_of(judge, row))
            assert row["option_tokens"] == [judge.format.option_tokens(o) for o in row["options"]]
            assert row["answer"] == (0 if row["supported"] else 1)
        before = [_p_yes(judge, row) for row in rows]
    finally:
        judge.close()

    run = tmp_path / "run"
    common = [
        "--data",
        str(data),
        "--out",
        str(run),
        "--accumulate",
        "4",
        "--val-rows",
        "0",
        "--lr",
        "0.01",
        "--threads",
        "2",
    ]
    _run("train", "lora", *common, "--max-steps", "2", "--checkpoint-every", "1")
    state = json.loads((run / "state.json").read_text())
    assert state["step"] == 2 and state["rows_done"] == 8
    _run("train", "lora", *common, "--max-steps", "1", "--resume")
    losses = [json.loads(line) for line in (run / "loss.jsonl").open()]
    assert [p["step"] for p in losses] == [1, 2, 3]
    result = CliRunner().invoke(main, ["train", "lora", *common, "--max-steps", "1"])
    assert result.exit_code == 2 and "--resume continues it" in result.output

    # a new run started from this one's adapter: its shape, its weights, a fresh optimizer
    more = tmp_path / "more"
    tiny = [*common[:2], "--out", str(more), "--init", str(run), "--lr", "1e-9", "--val-rows", "0"]
    _run("train", "lora", *tiny, "--max-steps", "1", "--accumulate", "4", "--threads", "2")
    started = json.loads((more / "state.json").read_text())
    assert started["step"] == 1 and started["init"]["step"] == 3
    assert started["config"]["rank"] == state["config"]["rank"]
    from safetensors.numpy import load_file

    weights = [load_file(str(r / "adapter" / "adapter_model.safetensors")) for r in (run, more)]
    assert weights[0].keys() == weights[1].keys()
    assert all(np.allclose(weights[0][k], weights[1][k], atol=1e-6) for k in weights[0])
    for extra, message in ((["--resume"], "not both"), (["--rank", "4"], "leave out --rank")):
        result = CliRunner().invoke(main, ["train", "lora", *tiny, *extra])
        assert result.exit_code == 2 and message in result.output, result.output

    adapter = tmp_path / "adapter.gguf"
    out = _run("train", "convert", "--run", str(run), "--out", str(adapter))
    assert "420 tensors, rank 8" in out and adapter.read_bytes()[:4] == b"GGUF"
    adapted = ResolvedModel(
        "adapted", str(real_data_dir), "1" * 64, JudgeSettings(threads=2), adapter=str(adapter)
    )
    judge = Judge.load(adapted)
    try:
        after = [_p_yes(judge, row) for row in rows]
    finally:
        judge.close()
    assert max(abs(a - b) for a, b in zip(after, before, strict=True)) > 0.01


def test_converted_query_and_key_weights_match_torch(tmp_path: Path, real_data_dir: Path):
    """A random adapter on the attention's query and key projections only (the two whose rows
    the conversion reorders): llama.cpp with the GGUF adapter reads what torch reads.

    llama.cpp runs the base as F32 here, the Q4_1 weights dequantized exactly as transformers
    dequantizes them: on the Q4_1 file its kernels round the activations to 8 bits, which a
    random adapter this strong amplifies differently on each CPU family (0.07 apart on one
    AVX-512 host), while the F32 file agrees with torch to 0.001 and rows left in the wrong
    order are 0.3 away."""
    import torch
    from peft import LoraConfig, get_peft_model

    from anvil_local.judge.judge import Judge
    from anvil_local.train.convert import convert_adapter
    from anvil_local.train.lora import load_base, option_logprobs

    torch.manual_seed(0)
    model = get_peft_model(
        load_base(real_data_dir),
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "k_proj"], init_lora_weights=False),
    )
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn_like(param) * 0.15)
    model.eval()
    folder = tmp_path / "peft"
    model.save_pretrained(str(folder))
    gguf_file = tmp_path / "qk.gguf"
    convert_adapter(folder, gguf_file, real_data_dir, "f32")

    exact = tmp_path / "base-f32.gguf"
    _dequantize(real_data_dir, exact)
    base = ResolvedModel("base", str(exact), "0" * 64, JudgeSettings(threads=2))
    judge = Judge.load(base)
    prompts = [
        Prompt(
            ("Input:\nThe cat sat on the mat.\n\n", "Actual Output:\nA dog sat.\n\n"),
            "Is the Actual Output supported by the Input? (Yes or No)",
        ),
        Prompt(
            ("Input:\nRain fell all day in Leeds.\n\n", "Actual Output:\nIt rained.\n\n"),
            "Is the Actual Output supported by the Input? (Yes or No)",
        ),
    ]
    try:
        rows = [
            {
                "tokens": judge.prompt_tokens(p),
                "option_tokens": [judge.format.option_tokens(o) for o in ("Yes", "No")],
            }
            for p in prompts
        ]
        plain = [float(judge.choose(p, ["Yes", "No"]).probabilities[0]) for p in prompts]
    finally:
        judge.close()
    with torch.no_grad():
        torch_adapted = [float(option_logprobs(model, r)[0].exp()) for r in rows]
    adapted = ResolvedModel(
        "qk", str(exact), "1" * 64, JudgeSettings(threads=2), adapter=str(gguf_file)
    )
    judge = Judge.load(adapted)
    try:
        llama_adapted = [float(judge.choose(p, ["Yes", "No"]).probabilities[0]) for p in prompts]
    finally:
        judge.close()
    moved = np.abs(np.array(torch_adapted) - np.array(plain))
    apart = np.abs(np.array(torch_adapted) - np.array(llama_adapted))
    assert moved.max() > 0.1, (plain, torch_adapted)  # the adapter changes the verdict a lot
    assert apart.max() < 0.01, (torch_adapted, llama_adapted)  # and both runtimes agree on it


def _dequantize(source: Path, target: Path) -> None:
    """`source` written with every tensor as F32 by llama.cpp's own quantizer."""
    import ctypes

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_ALL_F32
    params.allow_requantize = True
    status = llama_cpp.llama_model_quantize(
        str(source).encode(), str(target).encode(), ctypes.byref(params)
    )
    assert status == 0 and target.is_file()


def test_shipped_adapters_are_the_files_their_entries_name():
    from anvil_local.models.catalogue import entries, sha256_file

    adapters = [e for e in entries() if e.base]
    assert adapters, "no adapter is shipped in models/"
    for entry in adapters:
        path = entry.store_path()
        assert path.is_file() and path.stat().st_size == entry.size
        assert sha256_file(path) == entry.sha256
        assert (path.parent / entry.card).is_file()


def test_the_adapter_resolves_to_its_base_file_under_its_own_identity(real_data_dir: Path):
    from anvil_local.judge.pool import JudgePool
    from anvil_local.models import resolve_model
    from anvil_local.models.resolve import model_file

    base = resolve_model("smollm2-135m-instruct")
    adapted = resolve_model("smollm2-135m-faithful")
    assert Path(adapted.path).resolve() == Path(base.path).resolve()  # the Q4_1 file itself
    assert adapted.adapter.endswith("smollm2-135m-faithful.lora.gguf")
    assert adapted.base_sha256 == base.sha256 and adapted.sha256 != base.sha256
    assert JudgePool.key(adapted) != JudgePool.key(base)  # never the same loaded judge
    assert model_file("smollm2-135m-faithful")[1].resolve() == Path(base.path).resolve()


def test_the_headings_adapter_walks_the_readme_summaries_to_their_leaves(real_data_dir: Path):
    """The shipped headings adapter (benchmarks/headings_skill.py) on the README's four
    meeting summaries: the two-question DAG reaches the code DAG's leaves (the out-of-order
    leaf is 0.3 here, 0.2 there), where the untrained judge on the same file does not."""
    from anvil_local import evaluate, load_metric
    from anvil_local.run.dataset import read_cases

    rows = read_cases(ROOT / "examples" / "meeting_summaries.jsonl")
    metric = load_metric(ROOT / "examples" / "small_judge" / "headings_trained.toml")
    assert metric.model == "smollm2-135m-headings"
    scores = {}
    for model in ("smollm2-135m-headings", "smollm2-135m-instruct"):
        outcome = evaluate(rows, [metric], model=model, use_cache=False)
        scores[model] = {line.case_id: line.result.score for line in outcome.lines}
    assert scores["smollm2-135m-headings"] == {
        "ordered": 1.0,
        "missing-conclusion": 0.0,
        "swapped": 0.3,
        "no-headings": 0.0,
    }
    assert scores["smollm2-135m-instruct"] != scores["smollm2-135m-headings"]
