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
