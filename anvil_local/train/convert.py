"""A PEFT LoRA adapter written as a GGUF adapter that llama.cpp loads beside its base model
(`Llama(model_path=BASE, lora_path=ADAPTER)`).

transformers reads a llama GGUF's query and key weights back into its own rotary layout; the
GGUF keeps llama.cpp's. An adapter trained on the former changes the rows of W = B·A, so each
query and key `lora_b` has its rows put back in llama.cpp's order here. Names follow gguf-py's
own map from transformers' module names to GGUF tensor names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from anvil_local.errors import DataError, MissingExtra

_PREFIX = "base_model.model."


def _llama_order(rows: np.ndarray, heads: int) -> np.ndarray:
    """transformers' rotary row order -> llama.cpp's (interleaved halves per head)."""
    shape = rows.shape
    return rows.reshape(heads, 2, shape[0] // heads // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def _gguf() -> Any:
    try:
        import gguf
    except ImportError as exc:
        raise MissingExtra(
            f"converting an adapter needs the train extra ({exc.name} is missing): "
            "pip install 'anvil-local[train]'"
        ) from None
    return gguf


def base_shape(base_file: Path) -> tuple[int, int, int]:
    """(attention heads, key/value heads, blocks) of a llama GGUF, from its metadata."""
    reader = _gguf().GGUFReader(str(base_file))
    arch = reader.fields["general.architecture"].contents()
    if arch != "llama":
        raise DataError(f"{base_file}: a {arch} model; adapters convert for llama models only")

    def value(key: str) -> int:
        return int(reader.fields[f"llama.{key}"].contents())

    return value("attention.head_count"), value("attention.head_count_kv"), value("block_count")


def convert_adapter(
    adapter_dir: Path, out_file: Path, base_file: Path, outtype: str = "f32", name: str = ""
) -> dict[str, Any]:
    """Write `adapter_dir` (adapter_config.json + adapter_model.safetensors) as a GGUF
    adapter for `base_file`; returns what was written (tensor count, rank, alpha)."""
    gguf = _gguf()
    from safetensors.numpy import load_file

    heads, kv_heads, layers = base_shape(base_file)
    config_path = adapter_dir / "adapter_config.json"
    weights_path = adapter_dir / "adapter_model.safetensors"
    for path in (config_path, weights_path):
        if not path.is_file():
            raise DataError(f"{path}: missing (a PEFT adapter folder holds it)")
    config = json.loads(config_path.read_text())
    if config.get("peft_type") != "LORA":
        raise DataError(f"{adapter_dir}: not a LoRA adapter ({config.get('peft_type')})")
    alpha = float(config["lora_alpha"])
    rank = int(config["r"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, layers)
    dtype = {"f16": np.float16, "f32": np.float32}.get(outtype)
    if dtype is None:
        raise DataError(f"--outtype {outtype}: f16 or f32")
    out_file.parent.mkdir(parents=True, exist_ok=True)
    partial = out_file.with_name(out_file.name + ".partial")
    writer = gguf.GGUFWriter(str(partial), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    if name:
        writer.add_name(name)
    count = 0
    for key, value in sorted(load_file(str(weights_path)).items()):
        module, _, part = key.removeprefix(_PREFIX).rpartition(".lora_")
        if part not in ("A.weight", "B.weight"):
            raise DataError(f"{weights_path}: unexpected tensor {key}")
        target = names.get_name(module)
        if target is None:
            raise DataError(f"{weights_path}: no GGUF name for {module}")
        array = value.astype(np.float32)
        if part == "B.weight" and module.endswith("q_proj"):
            array = _llama_order(array, heads)
        elif part == "B.weight" and module.endswith("k_proj"):
            array = _llama_order(array, kv_heads)
        suffix = "lora_a" if part == "A.weight" else "lora_b"
        writer.add_tensor(f"{target}.weight.{suffix}", array.astype(dtype))
        count += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(out_file)
    return {"tensors": count, "rank": rank, "alpha": alpha, "outtype": outtype}
