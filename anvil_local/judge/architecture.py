"""What a GGUF's metadata says about whether it can judge at all.

A judge answers by predicting the next token, so it must be a causal decoder. Encoders and
embedding models (BERT and its kin, or any model converted with a pooling head) load in
llama.cpp but only embed text: asked for a verdict they would give noise, so they are
refused with one line instead.
"""

from __future__ import annotations

from collections.abc import Mapping

#: llama.cpp architectures that are encoders (bidirectional attention, no next token).
ENCODER_ARCHITECTURES = frozenset(
    {
        "bert",
        "modern-bert",
        "nomic-bert",
        "nomic-bert-moe",
        "neo-bert",
        "jina-bert-v2",
        "jina-bert-v3",
        "eurobert",
        "t5encoder",
    }
)


def architecture(metadata: Mapping[str, str]) -> str:
    return metadata.get("general.architecture", "") or "unknown"


def unfit_reason(metadata: Mapping[str, str]) -> str | None:
    """Why this model cannot judge (one phrase), or None when it can."""
    arch = architecture(metadata)
    if arch in ENCODER_ARCHITECTURES:
        return f"an encoder ({arch}): it embeds text and cannot answer a question"
    if metadata.get(f"{arch}.attention.causal", "true").lower() == "false":
        return f"an encoder ({arch}, bidirectional attention): it cannot answer a question"
    pooling = metadata.get(f"{arch}.pooling_type", "0")
    if pooling not in ("0", "-1", ""):
        return f"an embedding model ({arch} with a pooling head): it cannot answer a question"
    return None
