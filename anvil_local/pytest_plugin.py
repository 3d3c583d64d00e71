"""pytest integration: gate a test suite on metrics.

    def test_summary(anvil_judge):
        case = LLMTestCase(input=..., actual_output=...)
        assert_test(case, [load_metric("metrics/coherence.toml")], model=anvil_judge)

`anvil_judge` loads the judge once per session: `--anvil-model NAME|PATH` (or the
ANVIL_MODEL environment variable), else this host's tuned default judge.
"""

from __future__ import annotations

import os
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("anvil-local")
    group.addoption(
        "--anvil-model",
        default=None,
        metavar="NAME|PATH",
        help="judge model for the anvil_judge fixture",
    )


@pytest.fixture(scope="session")
def anvil_judge(request: pytest.FixtureRequest) -> Any:
    """A judge session on the model, loaded once for the test session."""
    from anvil_local.models import open_session

    model = request.config.getoption("--anvil-model") or os.environ.get("ANVIL_MODEL")
    return open_session(model)
