"""One exception hierarchy; the CLI turns any AnvilError into a single `Error: ...` line."""

from __future__ import annotations


class AnvilError(Exception):
    """Base of every error a user can act on. `exit_code` is what the CLI exits with."""

    exit_code = 2


class ModelError(AnvilError):
    """A model cannot be found, fetched, verified or loaded."""


class ModelLoadError(ModelError):
    """The model file cannot be loaded at all: fatal for a run, never one pair's error."""


class ChecksumMismatch(ModelError):
    """Fetched bytes do not have the catalogue's sha256."""


class ContextOverflow(AnvilError):
    """A prompt does not fit the model's context window (never truncated silently)."""

    def __init__(self, tokens: int, limit: int, case_id: str | None = None) -> None:
        self.tokens = tokens
        self.limit = limit
        self.case_id = case_id
        where = f" for case {case_id!r}" if case_id else ""
        super().__init__(
            f"prompt{where} needs {tokens} tokens but the context holds {limit}; "
            "raise --n-ctx (model permitting) or shorten the case"
        )


class GenerationError(AnvilError):
    """A constrained generation could not finish inside its token budget."""


class MetricDefinitionError(AnvilError, ValueError):
    """A metric or graph definition breaks a rule (raised where DeepEval raises ValueError)."""


class MetricTypeError(AnvilError, TypeError):
    """A metric or graph definition has an object of the wrong type."""


class MissingParamError(AnvilError, ValueError):
    """A test case lacks a field a metric needs."""

    def __init__(self, metric: str, case_id: str | None, field: str) -> None:
        self.metric = metric
        self.case_id = case_id
        self.field = field
        case = f"case {case_id!r}" if case_id else "the test case"
        super().__init__(f"metric {metric!r} needs {field!r}, which {case} does not have")


class DataError(AnvilError):
    """An input file (cases, metrics) cannot be read as asked."""


class NativeCrash(AnvilError):
    """llama.cpp cannot run on this host (a test decode in a child process died)."""


class WorkerCrash(AnvilError):
    """A worker process died from a signal mid-run; the results written so far stay valid.

    `outcome` holds the run's results up to the crash (set by `evaluate`)."""

    exit_code = 3
    outcome = None


def not_utf8(path: object, exc: UnicodeDecodeError) -> str:
    """The one-line description of a file that is not UTF-8 text."""
    return f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
