"""`anvil models convert` on the real default model: a new catalogue entry with its own
sha256 and provenance, whose verdicts stay close to the original's."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.models import get_judge
from anvil_local.models.catalogue import default_entry, get_entry, sha256_file
from anvil_local.paths import DATA_DIR_ENV

pytestmark = pytest.mark.model

QUESTION = "Is every statement in the Actual Output supported by the Input?"


def test_convert_registers_a_q8_0_file_that_judges_like_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_model_path: Path
):
    data = tmp_path / "data"
    (data / "models").mkdir(parents=True)
    (data / "models" / default_model_path.name).symlink_to(default_model_path)
    monkeypatch.setenv(DATA_DIR_ENV, str(data))
    source = default_entry()

    result = CliRunner().invoke(main, ["models", "convert", source.name, "--format", "q8_0"])
    assert result.exit_code == 0, result.output
    entry = get_entry(f"{source.name}-q8_0")
    path = entry.store_path()
    assert path.parent == data / "models" and path.is_file()
    assert entry.format == "Q8_0" and entry.source == source.name
    assert entry.source_sha256 == source.sha256 and entry.llama_cpp
    assert sha256_file(path) == entry.sha256 != source.sha256

    listed = CliRunner().invoke(main, ["models", "list"])
    assert entry.name in listed.output

    prompt = Prompt(
        (
            HEADER,
            "Input:\nThe bridge closes on Monday.\n\n",
            "Actual Output:\nIt shuts Monday.\n\n",
        ),
        "Is the Actual Output supported by the Input? Reply with Yes or No only.",
    )
    original = get_judge(default_model_path).choose(prompt, ["Yes", "No"])
    converted = get_judge(entry.name).choose(prompt, ["Yes", "No"])
    assert converted.probabilities == pytest.approx(original.probabilities, abs=0.05)


def test_convert_refuses_an_unknown_format_in_one_line():
    result = CliRunner().invoke(
        main, ["models", "convert", "smollm2-135m-instruct", "--format", "Q5_K"]
    )
    assert result.exit_code == 2
    assert "Q5_K" in result.output and "Traceback" not in result.output


def test_an_adapter_converts_by_merging_into_its_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_model_path: Path
):
    """`anvil models convert smollm2-135m-faithful --format Q8_0`: one file, the base's Q8_0
    conversion with the adapted weights merged, registered with the pair as its source. It
    reads what the adapter over the base reads: in F16, where nothing rounds the product
    away, to within 0.005 of the adapter applied at run time; in Q8_0 within 0.08 of the
    shipped way (the adapter over the Q4_1 file), while the adapter moves P(Yes) far more."""
    from anvil_local.judge.judge import Judge
    from anvil_local.judge.model import ResolvedModel, adapter_identity
    from anvil_local.judge.settings import JudgeSettings
    from anvil_local.models.store import convert

    data = tmp_path / "data"
    (data / "models").mkdir(parents=True)
    (data / "models" / default_model_path.name).symlink_to(default_model_path)
    monkeypatch.setenv(DATA_DIR_ENV, str(data))
    adapter = get_entry("smollm2-135m-faithful")
    base = default_entry()

    result = CliRunner().invoke(main, ["models", "convert", adapter.name, "--format", "q8_0"])
    assert result.exit_code == 0, result.output
    merged = get_entry(f"{adapter.name}-q8_0")
    assert merged.format == "Q8_0" and merged.source == adapter.name and not merged.base
    assert merged.source_sha256 == adapter_identity(base.sha256, adapter.sha256)
    assert merged.store_path().parent == data / "models"
    assert get_entry(f"{base.name}-q8_0").store_path().is_file()  # the base's conversion
    f16 = convert(adapter.name, "F16")

    prompts = [
        Prompt((HEADER, f"Input:\n{doc}\n\n", f"Actual Output:\n{claim}\n\n"), QUESTION)
        for doc, claim in (
            ("The bridge closes on Monday for repairs.", "The bridge closes on Monday."),
            ("The bridge closes on Monday for repairs.", "The bridge opens on Friday."),
            ("Prices rose by 3% last year, the bank said.", "Prices rose last year."),
        )
    ]

    def p_yes(path: Path, over: Path | None = None) -> list[float]:
        model = ResolvedModel(
            "m", str(path), "0" * 64, JudgeSettings(threads=2), adapter=str(over or "") or None
        )
        judge = Judge.load(model)
        try:
            return [float(judge.choose(p, ["Yes", "No"]).probabilities[0]) for p in prompts]
        finally:
            judge.close()

    lora = adapter.store_path()
    base_f16 = get_entry(f"{base.name}-f16").store_path()
    assert p_yes(f16.store_path()) == pytest.approx(p_yes(base_f16, lora), abs=0.005)
    shipped = p_yes(default_model_path, lora)
    assert p_yes(merged.store_path()) == pytest.approx(shipped, abs=0.08)
    plain = p_yes(default_model_path)
    assert max(abs(a - b) for a, b in zip(shipped, plain, strict=True)) > 0.3
