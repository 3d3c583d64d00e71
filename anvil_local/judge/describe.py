"""What a GGUF looks like to the judge: architecture, chat template, thinking, end-of-turn
tokens and how answers are spelled. Read from a vocab-only load (no weights), in a child
process when asked through `native.describe_file` (`python -m anvil_local.judge.describe
PATH` prints one JSON line), so `anvil doctor` and `anvil models add` cannot die of it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from anvil_local.judge.report import ModelReport

if TYPE_CHECKING:
    from anvil_local.judge.chat import ChatFormat


def _spelled(tokens: list[int], fmt: ChatFormat) -> str:
    return f"{fmt.describe_tokens(tokens)} ({len(tokens)} token{'s' if len(tokens) != 1 else ''})"


def describe(path: Path) -> ModelReport:
    """The report of one GGUF file, read in this process (vocab only)."""
    import llama_cpp

    from anvil_local.judge.architecture import architecture, unfit_reason
    from anvil_local.judge.chat import ChatFormat
    from anvil_local.judge.judge import model_template
    from anvil_local.judge.runtime import LlamaVocab

    llama = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    metadata = dict(llama.metadata)
    arch = architecture(metadata)
    unfit = unfit_reason(metadata)
    if unfit is not None:
        llama.close()
        return ModelReport(architecture=arch, unfit=unfit)
    vocab = LlamaVocab(path, llama)
    try:
        parts = model_template(vocab)
        fmt = ChatFormat(vocab, parts)
        ends = ", ".join(f"{fmt.describe_tokens([t])} ({t})" for t in fmt.end_ids)
        ten_raw = vocab.tokenize("10", special=False)
        yes_raw = vocab.tokenize(" Yes", special=False)
        ten = _spelled(ten_raw, fmt)
        yes = _spelled(yes_raw, fmt)
        answer_ten = fmt.option_tokens("10")
        answer_yes = fmt.option_tokens("Yes")
        if answer_ten != ten_raw:
            ten += f"; as an answer {fmt.describe_tokens(answer_ten)}"
        if answer_yes != yes_raw:
            yes += f"; as an answer {fmt.describe_tokens(answer_yes)}"
        return ModelReport(
            architecture=arch,
            template=parts.describe(),
            source=parts.source,
            thinking=parts.thinking_off,
            reasoning=parts.reasoning,
            end_tokens=ends,
            ten=ten,
            yes=yes,
        )
    finally:
        vocab.close()


def main(argv: list[str]) -> int:
    print(describe(Path(argv[0])).to_json(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
