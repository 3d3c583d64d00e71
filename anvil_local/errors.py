"""One exception tree. Each class carries its exit code and, where there is one, a hint: the
CLI turns any AnvilError into a single `Error: ...` line (`one_line()`) and exits with
`exit_code`.

    AnvilError                      2  bad input or an unusable set-up
    ├── DataError                      an input file cannot be read as asked
    │   └── MetricFileError            a metric file (the message names it)
    ├── MissingExtra                   an optional dependency group is not installed
    ├── KitError                       a kit cannot be written, or differs from its manifest
    ├── ModelError                     a model cannot be found, fetched, verified or loaded
    │   ├── ModelLoadError             the file cannot be loaded at all
    │   ├── ChecksumMismatch           fetched bytes do not have the catalogue's sha256
    │   ├── ModelMissing               a catalogue model is not here and cannot be fetched
    │   ├── NativeProbeFailed          the test decode's child failed without a crash
    │   └── TuningError                the host's choice could not be measured or recorded
    ├── NativeCrash                    llama.cpp cannot run on this host
    ├── ContextOverflow                a prompt does not fit the context window
    ├── GenerationError                constrained output did not finish in its budget
    ├── MetricDefinitionError          a definition breaks a rule (also a ValueError)
    ├── MetricTypeError                a definition holds the wrong type (also a TypeError)
    ├── MissingParamError              a case lacks a field a metric needs (a ValueError)
    ├── UnsupportedFeature             a DeepEval feature a local text judge cannot honour
    ├── RemoteJudgeError               a decision server refused a request (422: one pair)
    │   ├── JudgeRefused               ... refused the judge itself (401, 404, 501): the run stops
    │   │   └── NoTextGeneration       ... has no chat completions (a task node needs text)
    │   └── JudgeUnavailable           ... did not answer after its retries (a run moves the
    │                                      work to another server, or stops)
    └── WorkerCrash                 3  a worker process died mid-run
"""

from __future__ import annotations

from typing import ClassVar


class AnvilError(Exception):
    """Base of every error a user can act on."""

    exit_code: ClassVar[int] = 2
    #: What to do about it, added to the CLI's line when the message does not say it already.
    hint: ClassVar[str] = ""

    def one_line(self) -> str:
        """The message as the CLI prints it: one line, with the hint when it adds something."""
        text = " ".join(str(self).split()) or type(self).__name__
        if self.hint and self.hint not in text:
            text = f"{text} ({self.hint})"
        return text


class DataError(AnvilError):
    """An input file (cases, metrics) cannot be read as asked."""


class MetricFileError(DataError):
    """A metric file that cannot be read or breaks a rule; the message names the file."""


class MissingExtra(AnvilError):
    """An optional dependency group is not installed; the message names the install command."""


class KitError(AnvilError):
    """An offline kit (`anvil bundle`) cannot be written (a pip step failed), or a kit's
    files differ from its manifest; the message names the step or the file."""


class ModelError(AnvilError):
    """A model cannot be found, fetched, verified or loaded."""


class ModelLoadError(ModelError):
    """The model file cannot be loaded at all: fatal for a run, never one pair's error."""

    hint = "`anvil doctor --model NAME|PATH` checks a model file"


class ChecksumMismatch(ModelError):
    """Fetched bytes do not have the catalogue's sha256."""


class ModelMissing(ModelError):
    """A catalogue model is not on this machine and cannot be fetched (no package index,
    say): the message names the file; the hint says how to bring it in by hand."""

    hint = (
        "bring the file in: `anvil models add PATH` stores it, ANVIL_MODEL=PATH runs with it, "
        "or install a kit written by `anvil bundle` (docs/airgapped.md)"
    )


class NativeProbeFailed(ModelError):
    """The test decode's child process failed without a crash (a load error, say): no
    verdict on the native library."""


class TuningError(ModelError):
    """Tuning could not measure or record the host's choice."""

    hint = "`anvil models tune` measures again; --model or ANVIL_MODEL pins a file"


class NativeCrash(AnvilError):
    """llama.cpp cannot run on this host (a test decode in a child process died)."""

    hint = "`anvil doctor` shows more"


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

    def __init__(self, metric: str, case_id: str | None, field: str, empty: bool = False) -> None:
        self.metric = metric
        self.case_id = case_id
        self.field = field
        case = f"case {case_id!r}" if case_id else "the test case"
        if empty:
            super().__init__(f"{field!r} cannot be empty for the {metric!r} metric ({case})")
        else:
            super().__init__(f"metric {metric!r} needs {field!r}, which {case} does not have")


#: DeepEval's name for it (`from deepeval.errors import MissingTestCaseParamsError` ports).
MissingTestCaseParamsError = MissingParamError


class UnsupportedFeature(AnvilError, ValueError):
    """A DeepEval keyword or input this judge cannot honour (an image, a hosted service, a
    second model): refused in one line that says why, never dropped silently."""


class RemoteJudgeError(AnvilError):
    """A decision server refused a question (401, 404, 422, 501) or answered with another
    judge than the run's: one line naming the server, the model and the status."""


class JudgeRefused(RemoteJudgeError):
    """A decision server refused the judge itself (a wrong key, no such model, no decisions
    for it: 401, 403, 404, 501): no pair can be judged there, so a run stops at once."""


class NoTextGeneration(JudgeRefused):
    """A decision server answers decisions but no chat completions: a DAG task node (which
    needs text) cannot be judged there; the walk names the node and the way out."""


class JudgeUnavailable(RemoteJudgeError):
    """A decision server did not answer after its retries (timeouts, resets, 429/503): the
    pair was not judged. A run with other servers hands the work to them; never a score."""


class WorkerCrash(AnvilError):
    """A worker process died from a signal mid-run; the results written so far stay valid.

    `outcome` holds the run's results up to the crash (set by `evaluate`)."""

    exit_code = 3
    hint = "re-running the command resumes, and retries the pair it was judging"
    outcome = None


def io_error(path: object, exc: OSError, doing: str = "cannot write") -> DataError:
    """An OS error on a file the run reads or writes, as one line naming the file and the
    OS's reason ("No space left on device"): a full disk stops a run as bad input."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return DataError(f"{path}: {doing}: {reason}")


def not_utf8(path: object, exc: UnicodeDecodeError) -> str:
    """The one-line description of a file that is not UTF-8 text."""
    return f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
