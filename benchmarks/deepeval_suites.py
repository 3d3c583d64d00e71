"""Issue 42: DeepEval's own DAG, conversational DAG and DAG serialization tests, run against
anvil_local with only their imports rewritten (a port as a user would make it).

    python benchmarks/deepeval_suites.py [--deepeval-git DIR] [--no-local-judge]

Each test file is read from DeepEval's repository (a bare git directory, at its HEAD), its
`from deepeval... import` lines are rewritten by the table `IMPORTS` below (nothing else in
the file changes), and pytest runs it in a temporary directory, once against anvil_local
and once unchanged against the installed DeepEval (the reference: what DeepEval itself
passes). The tests DeepEval marks `requires_openai` run on anvil's default local judge (the
variable they look for is set to a placeholder anvil never reads; DeepEval, without a key,
skips them); `--no-local-judge` skips them as DeepEval does. A test that fails is listed in
the notes with pytest's one-line message.

Figures: benchmarks/results/deepeval_suites.json.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness import add_out, parser, write_figures

DEFAULT_GIT = Path("/work/.mirror/confident-ai+deepeval/repo")

#: DeepEval's module -> the anvil_local module that mirrors the names imported from it.
#: Only `from <module> import ...` lines are rewritten; a deepeval import missing from this
#: table stops the run (so a new DeepEval import is seen, not silently left on DeepEval).
IMPORTS: dict[str, str] = {
    "deepeval": "anvil_local",  # evaluate
    "deepeval.metrics": "anvil_local",  # DAGMetric, ConversationalDAGMetric
    "deepeval.metrics.dag": "anvil_local.metrics.dag",  # nodes, graph, serialization API
    "deepeval.metrics.dag.utils": "anvil_local.metrics.dag.utils",  # is_valid_dag, copy_graph
    "deepeval.metrics.conversational_dag": "anvil_local.metrics.conversational",
    "deepeval.models": "anvil_local",  # DeepEvalBaseLLM (a custom model answers the nodes)
    "deepeval.test_case": "anvil_local",  # LLMTestCase, SingleTurnParams, MultiTurnParams, Turn
}

#: (suite, path in DeepEval's repository)
SUITES = [
    ("DAG", "tests/test_metrics/test_dag.py"),
    ("conversational DAG", "tests/test_metrics/test_conversational_dag.py"),
    ("DAG serialization", "tests/test_metrics/test_dag_serialization.py"),
]

COLUMNS = [
    "suite",
    "file@commit",
    "against",
    "tests",
    "passed",
    "failed",
    "skipped",
    "xfailed",
    "share passed",
]

_IMPORT = re.compile(r"^(\s*from\s+)(deepeval(?:\.\w+)*)(\s+import\b)", re.MULTILINE)
#: The plugins that must not load into a run against anvil_local: DeepEval's own pytest
#: plugin (it imports deepeval and starts its test-run bookkeeping) and anvil's (the run
#: is of DeepEval's file, not of anvil's fixtures).
_PLUGINS = ["-p", "no:cacheprovider", "-p", "no:deepeval", "-p", "no:anvil_local"]
_PLACEHOLDER_KEY = "not-read-by-anvil-local"


def rewrite_imports(source: str) -> tuple[str, Counter[str]]:
    """The file with its deepeval imports pointed at anvil_local, and how many lines each
    module's rewrite touched."""
    used: Counter[str] = Counter()

    def swap(match: re.Match[str]) -> str:
        module = match.group(2)
        if module not in IMPORTS:
            raise SystemExit(f"no anvil_local module for `from {module} import` (add to IMPORTS)")
        used[module] += 1
        return f"{match.group(1)}{IMPORTS[module]}{match.group(3)}"

    rewritten = _IMPORT.sub(swap, source)
    left = re.findall(r"^\s*import\s+deepeval\b.*$", rewritten, re.MULTILINE)
    if left:
        raise SystemExit(f"an `import deepeval` line is not rewritten: {left[0].strip()}")
    return rewritten, used


@dataclass
class Outcome:
    """One pytest run of one file: counts by outcome and the failures' one-line messages."""

    counts: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[str, str]] = field(default_factory=list)
    skips: list[tuple[str, str]] = field(default_factory=list)

    @property
    def tests(self) -> int:
        return sum(self.counts.values())

    @property
    def share(self) -> float | None:
        """Passed (xfailed counted with them: pytest's success) over the tests that ran."""
        ran = self.tests - self.counts["skipped"]
        return (self.counts["passed"] + self.counts["xfailed"]) / ran if ran else None


def run_pytest(path: Path, env: dict[str, str], timeout: float) -> Outcome:
    report = path.with_suffix(".xml")
    command = [sys.executable, "-m", "pytest", path.name, "-q", *_PLUGINS]
    command += ["-p", "no:randomly", f"--junitxml={report.name}", "-o", "junit_family=xunit2"]
    done = subprocess.run(
        command, cwd=path.parent, env=env, capture_output=True, text=True, timeout=timeout
    )
    if not report.is_file():
        raise SystemExit(f"pytest wrote no report for {path.name}:\n{done.stdout}{done.stderr}")
    return parse_junit(report)


def parse_junit(report: Path) -> Outcome:
    outcome = Outcome()
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            outcome.counts["failed"] += 1
            message = (failure.get("message") or "").strip().splitlines()
            outcome.failures.append((name, message[0][:240] if message else ""))
        elif skipped is not None and skipped.get("type") == "pytest.xfail":
            outcome.counts["xfailed"] += 1
        elif skipped is not None:
            outcome.counts["skipped"] += 1
            outcome.skips.append((name, (skipped.get("message") or "").strip()[:160]))
        else:
            outcome.counts["passed"] += 1
    return outcome


def git_show(git_dir: Path, rev: str, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{rev}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def main() -> None:
    p = parser(__doc__, data=False, model=False, out=False)
    p.add_argument(
        "--deepeval-git",
        type=Path,
        default=DEFAULT_GIT,
        help=f"DeepEval's repository, a (bare) git directory (default: {DEFAULT_GIT})",
    )
    p.add_argument("--rev", default="HEAD", help="the commit to read the tests at (HEAD)")
    p.add_argument(
        "--no-local-judge",
        action="store_true",
        help="skip the requires_openai tests (as DeepEval does without a key) instead of "
        "running them on anvil's default local judge",
    )
    p.add_argument("--timeout", type=float, default=900, help="seconds per pytest run")
    add_out(p)
    args = p.parse_args()
    commit = subprocess.run(
        ["git", f"--git-dir={args.deepeval_git}", "rev-parse", args.rev],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    base_env = {**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "PYTHONHASHSEED": "0"}
    base_env.pop("OPENAI_API_KEY", None)
    anvil_env = dict(base_env)
    if not args.no_local_judge:
        anvil_env["OPENAI_API_KEY"] = _PLACEHOLDER_KEY
    rows, notes = [], []
    print(f"{'suite':<22}{'against':<16}{'tests':>6}{'pass':>6}{'fail':>6}{'skip':>6}{'xfail':>6}")
    with tempfile.TemporaryDirectory(prefix="deepeval_suites_") as tmp:
        for suite, repo_path in SUITES:
            source = git_show(args.deepeval_git, commit, repo_path)
            rewritten, used = rewrite_imports(source)
            name = Path(repo_path).name
            runs = []
            for against, text, env in (
                ("anvil_local", rewritten, anvil_env),
                ("deepeval (ref.)", source, base_env),
            ):
                folder = Path(tmp) / against.split()[0] / Path(repo_path).stem
                folder.mkdir(parents=True)
                (folder / name).write_text(text)
                runs.append((against, run_pytest(folder / name, env, args.timeout)))
            for against, outcome in runs:
                c = outcome.counts
                print(
                    f"{suite:<22}{against:<16}{outcome.tests:>6}{c['passed']:>6}"
                    f"{c['failed']:>6}{c['skipped']:>6}{c['xfailed']:>6}"
                )
                rows.append(
                    [
                        suite,
                        f"{repo_path}@{commit[:12]}",
                        against,
                        outcome.tests,
                        c["passed"],
                        c["failed"],
                        c["skipped"],
                        c["xfailed"],
                        outcome.share,
                    ]
                )
            anvil = runs[0][1]
            rewrites = ", ".join(f"{m} -> {IMPORTS[m]}" for m in sorted(used))
            notes.append(f"{name}: imports rewritten: {rewrites}")
            for test, message in anvil.failures:
                notes.append(f"{name}: FAILED {test}: {message}")
                print(f"  FAILED {test}: {message}")
            for test, message in anvil.skips:
                notes.append(f"{name}: skipped {test}: {message}")
    notes.append(
        "share passed: (passed + xfailed) / (tests - skipped); an xfailed test is one the "
        "file itself expects to fail (pytest counts it a success)"
    )
    if not args.no_local_judge:
        notes.append(
            "the requires_openai tests ran on anvil's default local judge (their key variable "
            "set to a placeholder anvil never reads); DeepEval, without a key, skips them"
        )
    write_figures(
        args,
        "deepeval_suites",
        "DeepEval's DAG test files run against anvil_local with only their imports rewritten, "
        "and against DeepEval itself",
        COLUMNS,
        rows,
        formats={"share passed": ".1%"},
        notes=notes,
        settings={"deepeval_commit": commit, "local_judge": not args.no_local_judge},
    )


if __name__ == "__main__":
    main()
