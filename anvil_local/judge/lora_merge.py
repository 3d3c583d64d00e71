"""A LoRA adapter merged into its base model's weights, written as one GGUF file.

llama.cpp applies an adapter at run time by adding its low-rank products to every projection
it adapts, on every token: 6% to 16% more time a case on SmolLM2-135M (benchmarks/training.md,
"The adapter's cost"), and only over the base's own file. Merged, the adapted weights are
W + alpha/rank * B.A, computed once from the base file the adapter was trained on, then
written in the format of a faster conversion of that base (llama.cpp's own, Q8_0 say), so
the trained judge costs what the converted base costs. Every tensor the adapter does not
touch is the conversion's own bytes; the adapted ones are quantized by gguf-py to the type
the conversion gave them (its Q8_0 and Q4_0 match llama.cpp's quantizer bit for bit).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from anvil_local.errors import MissingExtra, ModelError

log = logging.getLogger(__name__)


def _gguf() -> Any:
    try:
        import gguf
        import gguf.quants
    except ImportError as exc:
        raise MissingExtra(
            f"merging an adapter needs gguf ({exc.name} is missing): "
            "pip install 'anvil-local[merge]'"
        ) from None
    return gguf


def merge_adapter(base: Path, converted: Path, adapter: Path, target: Path) -> int:
    """Write `converted` (llama.cpp's conversion of `base`) to `target` with `adapter` (a
    GGUF LoRA adapter trained on `base`) merged into the tensors it adapts; returns how many
    tensors were merged."""
    gguf = _gguf()
    types = gguf.GGMLQuantizationType
    original = {t.name: t for t in gguf.GGUFReader(str(base)).tensors}
    lora = gguf.GGUFReader(str(adapter))
    kind = lora.fields.get("general.type")
    if kind is None or kind.contents() != "adapter":
        raise ModelError(f"{adapter.name}: not a GGUF adapter (general.type is not 'adapter')")
    alpha = float(lora.fields["adapter.lora.alpha"].contents())
    products = {t.name: np.asarray(t.data, dtype=np.float32) for t in lora.tensors}
    reader = gguf.GGUFReader(str(converted))
    arch = reader.fields["general.architecture"].contents()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    writer = gguf.GGUFWriter(str(partial), arch)
    for field in reader.fields.values():  # the conversion's metadata, as it is
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    merged = 0
    for tensor in reader.tensors:
        low, high = products.get(f"{tensor.name}.lora_a"), products.get(f"{tensor.name}.lora_b")
        if low is None or high is None:
            writer.add_tensor(tensor.name, np.asarray(tensor.data), raw_dtype=tensor.tensor_type)
            continue
        source = original.get(tensor.name)
        if source is None:
            raise ModelError(f"{base.name} has no tensor {tensor.name}, which the adapter adapts")
        weight = gguf.quants.dequantize(source.data, source.tensor_type).astype(np.float32)
        delta = (alpha / low.shape[0]) * (high @ low)
        if delta.shape != weight.shape:
            raise ModelError(
                f"{adapter.name}: {tensor.name} adapts a {delta.shape} weight, the base's is "
                f"{weight.shape}"
            )
        weight = weight + delta
        if tensor.tensor_type == types.F32:
            writer.add_tensor(tensor.name, weight)
        else:
            try:
                data = gguf.quants.quantize(weight, tensor.tensor_type)
            except NotImplementedError:
                raise ModelError(
                    f"gguf cannot write {tensor.tensor_type.name} weights: merge into Q8_0, "
                    "Q4_0 or F16"
                ) from None
            writer.add_tensor(tensor.name, data, raw_dtype=tensor.tensor_type)
        merged += 1
    if merged != len(products) // 2:
        partial.unlink(missing_ok=True)
        raise ModelError(
            f"{adapter.name} adapts {len(products) // 2} tensors, {merged} found in {base.name}"
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(target)
    log.info("merged %d tensors of %s into %s", merged, adapter.name, target.name)
    return merged
