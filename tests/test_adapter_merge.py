"""Merging a LoRA adapter into its base (`anvil_local.judge.lora_merge`), on tiny GGUF files made
here: the adapted weight becomes W + alpha/rank * B.A in the conversion's type, every other
tensor and the metadata are the conversion's own, and a file that does not fit is refused
in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="the merge extra is not installed")

from anvil_local.errors import ModelError  # noqa: E402
from anvil_local.judge.lora_merge import merge_adapter  # noqa: E402

Q8_0 = gguf.GGMLQuantizationType.Q8_0
RNG = np.random.default_rng(0)
WEIGHT = RNG.normal(0, 0.05, (8, 64)).astype(np.float32)  # 8 outputs, 64 inputs
OTHER = RNG.normal(0, 0.05, (4, 64)).astype(np.float32)
NORM = np.ones(64, dtype=np.float32)


def _written(writer, path: Path) -> Path:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _model(path: Path, quantized: bool, name: str = "blk.0.attn_q.weight") -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny")
    writer.add_uint32("llama.block_count", 1)
    for tensor, data in ((name, WEIGHT), ("blk.0.ffn_up.weight", OTHER)):
        if quantized:
            writer.add_tensor(tensor, gguf.quants.quantize(data, Q8_0), raw_dtype=Q8_0)
        else:
            writer.add_tensor(tensor, data)
    writer.add_tensor("blk.0.attn_norm.weight", NORM)
    return _written(writer, path)


def _adapter(path: Path, low: np.ndarray, high: np.ndarray, kind: str = "adapter") -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.type", kind)
    writer.add_float32("adapter.lora.alpha", 4.0)
    writer.add_tensor("blk.0.attn_q.weight.lora_a", low)
    writer.add_tensor("blk.0.attn_q.weight.lora_b", high)
    return _written(writer, path)


def _tensors(path: Path) -> dict[str, object]:
    return {t.name: t for t in gguf.GGUFReader(str(path)).tensors}


LOW = RNG.normal(0, 0.3, (2, 64)).astype(np.float32)  # rank 2
HIGH = RNG.normal(0, 0.3, (8, 2)).astype(np.float32)


def test_the_adapted_weight_is_merged_and_the_rest_is_the_conversions_own(tmp_path: Path):
    base = _model(tmp_path / "base.gguf", quantized=False)
    converted = _model(tmp_path / "q8.gguf", quantized=True)
    adapter = _adapter(tmp_path / "lora.gguf", LOW, HIGH)
    out = tmp_path / "merged.gguf"
    assert merge_adapter(base, converted, adapter, out) == 1
    merged, before = _tensors(out), _tensors(converted)
    q = merged["blk.0.attn_q.weight"]
    assert q.tensor_type == Q8_0
    expected = WEIGHT + (4.0 / 2) * (HIGH @ LOW)
    read = gguf.quants.dequantize(q.data, Q8_0)
    step = np.abs(expected).max() / 127  # one Q8_0 step of the largest block, at most
    assert np.abs(read - expected).max() <= step
    assert np.abs(read - WEIGHT).max() > 10 * step  # the product is really in it
    for name in ("blk.0.ffn_up.weight", "blk.0.attn_norm.weight"):
        assert np.array_equal(np.asarray(merged[name].data), np.asarray(before[name].data))
    fields = gguf.GGUFReader(str(out)).fields
    assert fields["general.name"].contents() == "tiny"
    assert fields["llama.block_count"].contents() == 1


def test_an_f32_conversion_holds_the_exact_sum(tmp_path: Path):
    base = _model(tmp_path / "base.gguf", quantized=False)
    adapter = _adapter(tmp_path / "lora.gguf", LOW, HIGH)
    out = tmp_path / "merged.gguf"
    merge_adapter(base, base, adapter, out)
    read = np.asarray(_tensors(out)["blk.0.attn_q.weight"].data)
    assert np.allclose(read, WEIGHT + 2.0 * (HIGH @ LOW), atol=1e-6)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: _adapter(d / "a.gguf", LOW, HIGH, kind="model"), "not a GGUF adapter"),
        (lambda d: _adapter(d / "a.gguf", LOW[:, :32], HIGH), r"adapts a \(8, 32\) weight"),
    ],
)
def test_an_adapter_that_does_not_fit_is_refused_in_one_line(tmp_path: Path, make, message):
    base = _model(tmp_path / "base.gguf", quantized=False)
    with pytest.raises(ModelError, match=message) as raised:
        merge_adapter(base, base, make(tmp_path), tmp_path / "out.gguf")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "out.gguf").exists()


def test_an_adapter_for_tensors_the_base_lacks_is_refused(tmp_path: Path):
    base = _model(tmp_path / "base.gguf", quantized=False, name="blk.0.attn_k.weight")
    adapter = _adapter(tmp_path / "lora.gguf", LOW, HIGH)
    with pytest.raises(ModelError, match="adapts 1 tensors, 0 found"):
        merge_adapter(base, base, adapter, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()


def test_without_gguf_the_error_names_the_extra(tmp_path: Path, monkeypatch):
    import sys

    from anvil_local.errors import MissingExtra

    monkeypatch.setitem(sys.modules, "gguf", None)
    with pytest.raises(MissingExtra, match=r"pip install 'anvil-local\[merge\]'"):
        merge_adapter(tmp_path / "b", tmp_path / "c", tmp_path / "a", tmp_path / "o")
