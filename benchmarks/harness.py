"""The benchmarks' shared harness: options, data, timing, a private cache, and the JSON
figures every script writes (outside pytest collection; run the scripts from anywhere).

A script builds its options with `parser()` (`--data`, `--model`, `--out`, `--no-out`, and
`add_articles` / `add_rounds` where it takes them), loads cases with `summeval_cases()`,
`meeting_cases()` or `geval_files()`, times with `Timer` inside `fresh_cache()`, prints its
table as before, and ends with `write_figures()`, which writes
`benchmarks/results/<question>.json` (or `<question>.<variant>.json` when a script keeps one
figure per model). `benchmarks/render.py` turns those files into the README's tables.

The results file (schema 1):

    {
      "schema": 1,
      "question": "prefix_reuse",          # the README marker: <!-- figures:prefix_reuse -->
      "variant": null,                     # or e.g. a model name: one file per model
      "title": "...",                      # one line: what the table shows
      "columns": ["mode", "evaluated", ...],
      "rows": [["cold", 2472, ...], ...],  # cells: number, string, null (not measured), or
                                           # {"value": v, "low": l, "high": h} (95% interval)
      "formats": {"x unique": ".3f"},      # optional, per numeric column: a format spec
                                           # (".3f") or a template ("{:.2f}x")
      "units": {"evaluated": "tokens"},    # optional: unit of each numeric column
      "notes": ["..."],                    # optional: lines shown under the table
      "caveat": null,                      # optional: shown above the table, in bold
      "command": "python benchmarks/...",  # the exact command line of the run
      "date": "2026-12-02T14:00:00+00:00", # when the run ended (null: not known)
      "machine": {"cpu": "...", "cores": 2, "platform": "...", "python": "3.11.9"},
                                           # (seeded figures: {"description": "..."})
      "versions": {"anvil-local": "0.1.0", "llama-cpp-python": "0.3.36"},
      "models": [{"name": "...", "file": "...", "sha256": "..."}],
      "settings": {"rounds": 12},          # the options that shaped the figures
      "source": "run",                     # or where seeded figures were copied from
      "recorded": "2026-12-01 (commit ...)" # seeded figures only: when they were recorded
    }
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DATA_DIR = BENCH_DIR / "data"
DEFAULT_DATA = DATA_DIR / "summeval.jsonl"
RESULTS_DIR = BENCH_DIR / "results"
SCHEMA = 1

GEVAL_NAMES = ("coherence", "consistency", "fluency", "relevance")
GEVAL_DIR = ROOT / "examples" / "geval"
GEVAL_PANEL = GEVAL_DIR / "summeval_panel.toml"
MEETINGS = ROOT / "examples" / "meeting_summaries.jsonl"
HEADINGS_LLM = ROOT / "examples" / "headings_llm.toml"
SHIPPED_MODEL = "smollm2-135m-instruct"


# -- options ---------------------------------------------------------------------------------


def parser(
    description: str,
    *,
    data: bool = True,
    model: bool = True,
    model_default: str | None = None,
    model_help: str | None = None,
    out: bool = True,
) -> argparse.ArgumentParser:
    """The options every script shares: `--data` (SummEval JSONL, default the repository's
    `benchmarks/data/summeval.jsonl`), `--model` (default `model_default`, else the default
    judge), and where the JSON figures go (`--out`, `--no-out`); `data`, `model` and `out`
    False leave that option out."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    if data:
        p.add_argument(
            "--data",
            type=Path,
            default=DEFAULT_DATA,
            help=f"SummEval JSONL (default: {DEFAULT_DATA.relative_to(ROOT)})",
        )
    default_help = (
        f"catalogue name or GGUF path (default: {model_default})"
        if model_default
        else "catalogue name or GGUF path (default: the default judge)"
    )
    if model:
        p.add_argument("--model", default=model_default, help=model_help or default_help)
    if out:
        add_out(p)
    return p


def add_out(p: argparse.ArgumentParser, default_help: str | None = None) -> None:
    """`--out PATH` and `--no-out`, for a script that builds its own parser."""
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=default_help
        or f"the JSON figures (default: {RESULTS_DIR.relative_to(ROOT)}/<question>.json)",
    )
    p.add_argument("--no-out", action="store_true", help="print the figures, write no JSON")


def add_articles(p: argparse.ArgumentParser, default: int, help: str | None = None) -> None:
    p.add_argument(
        "--articles",
        type=int,
        default=default,
        help=help or f"SummEval documents, 16 summaries each (default: {default})",
    )


def add_rounds(p: argparse.ArgumentParser, default: int, help: str) -> None:
    p.add_argument("--rounds", type=int, default=default, help=f"{help} (default: {default})")


# -- data ------------------------------------------------------------------------------------


def _need(path: Path) -> Path:
    if not path.is_file():
        raise SystemExit(f"no data at {path}; pass --data")
    return path


def summeval_rows(path: Path, docs: int) -> list[dict]:
    """Every row of the first `docs` documents, in file order."""
    chosen: list[str] = []
    rows = []
    for line in _need(path).read_text().splitlines():
        row = json.loads(line)
        if row["doc"] not in chosen:
            if len(chosen) == docs:
                continue
            chosen.append(row["doc"])
        rows.append(row)
    return rows


def summeval_cases(path: Path, articles: int, per_article: int = 16) -> list:
    """The first `per_article` summaries of the first `articles` documents, in file order."""
    from anvil_local import LLMTestCase

    chosen: dict[str, list] = {}
    for line in _need(path).read_text().splitlines():
        row = json.loads(line)
        doc = row["doc"]
        if doc not in chosen and len(chosen) == articles:
            continue
        group = chosen.setdefault(doc, [])
        if len(group) < per_article:
            group.append(
                LLMTestCase(input=row["input"], actual_output=row["actual_output"], id=row["id"])
            )
    return [case for group in chosen.values() for case in group]


def meeting_cases() -> list:
    """The example meeting summaries (`examples/meeting_summaries.jsonl`)."""
    from anvil_local import LLMTestCase

    return [LLMTestCase(**json.loads(x)) for x in MEETINGS.read_text().splitlines()]


def geval_files() -> list:
    """The four SummEval G-Eval metrics (`examples/geval/*.toml`), each file alone."""
    from anvil_local import load_metric

    return [load_metric(GEVAL_DIR / f"{n}.toml") for n in GEVAL_NAMES]


def geval_panel() -> list:
    """The same four as one G-Eval panel (`examples/geval/summeval_panel.toml`)."""
    from anvil_local import load_metrics

    return load_metrics(GEVAL_PANEL)


def speed_workloads(data: Path, articles: int) -> list[tuple[str, list, list]]:
    """The shipped workloads the speed benchmarks share: the four SummEval G-Eval files on 16
    summaries of each of `articles` documents (alone, then as one panel), the
    model-at-every-node headings DAG on the meeting summaries, and the likelihood contrast on
    the SummEval cases."""
    from anvil_local import load_metric

    summeval = summeval_cases(data, articles)
    return [
        ("4 G-Eval metrics, SummEval", summeval, geval_files()),
        ("4 G-Eval metrics as one panel, SummEval", summeval, geval_panel()),
        ("headings DAG with a task node", meeting_cases(), [load_metric(HEADINGS_LLM)]),
        ("likelihood contrast, SummEval", summeval, [
            load_metric(ROOT / "examples" / "small_judge" / "likelihood_contrast.toml")
        ]),
    ]  # fmt: skip


# -- timing ----------------------------------------------------------------------------------


@contextmanager
def fresh_cache() -> Iterator[Path]:
    """A private, empty result/steps cache for the timed part."""
    saved = os.environ.get("ANVIL_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="anvil-bench-") as tmp:
        os.environ["ANVIL_CACHE_DIR"] = tmp
        try:
            yield Path(tmp)
        finally:
            if saved is None:
                os.environ.pop("ANVIL_CACHE_DIR", None)
            else:
                os.environ["ANVIL_CACHE_DIR"] = saved


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


# -- what a run ran on -----------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """CPU model, cores and flags that matter to llama.cpp, from /proc/cpuinfo where there
    is one."""
    info: dict[str, Any] = {"cores": os.cpu_count(), "platform": platform.platform()}
    info["python"] = platform.python_version()
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    name = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    info["cpu"] = name.group(1).strip() if name else platform.processor() or None
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
    if flags:
        have = set(flags.group(1).split())
        wanted = ("avx2", "avx512f", "avx512_vnni", "amx_tile")
        info["simd"] = [f for f in wanted if f in have]
    return info


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for dist in ("anvil-local", "llama-cpp-python", "deepeval"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            if dist != "deepeval":
                found[dist] = None
    return found


def model_info(model: Any) -> dict[str, Any]:
    """Name, file and sha256 of a loaded judge, a ResolvedModel, a catalogue entry or a path
    (what is known of it)."""
    model = getattr(model, "model", model)  # a loaded judge carries its ResolvedModel
    if isinstance(model, Mapping):
        return {k: model.get(k) for k in ("name", "file", "sha256")}
    if isinstance(model, str | os.PathLike):
        text = os.fspath(model)
        if text.endswith(".gguf") or os.sep in text:
            return {"name": Path(text).name, "file": Path(text).name, "sha256": None}
        return {"name": text, "file": None, "sha256": None}
    path = getattr(model, "path", None)
    return {
        "name": getattr(model, "name", None),
        "file": Path(path).name if path else getattr(model, "file", None),
        "sha256": getattr(model, "sha256", None) or None,
    }


def line_models(outcome: Any) -> list[dict[str, Any]]:
    """The models an `evaluate()` outcome's lines name, with their sha256, in first-seen
    order."""
    seen = {(line.model, line.model_sha256): None for line in outcome.lines}
    return [{"name": n, "file": None, "sha256": sha or None} for n, sha in seen]


def variant_name(text: str) -> str:
    """A model name as part of a file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "default"


def command_line() -> str:
    script = Path(sys.argv[0])
    with suppress(ValueError):
        script = script.resolve().relative_to(ROOT)
    return shlex.join(["python", str(script), *sys.argv[1:]])


# -- the JSON figures ------------------------------------------------------------------------


def results_path(question: str, variant: str | None = None) -> Path:
    name = question if variant is None else f"{question}.{variant_name(variant)}"
    return RESULTS_DIR / f"{name}.json"


def _cell(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, list | tuple):
        return [_cell(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):  # numpy scalars
        value = value.item()
    if isinstance(value, float):
        if value != value:  # NaN: not measured
            return None
        return float(f"{value:.6g}")
    return value


def dumps(record: Mapping[str, Any]) -> str:
    """A results record as JSON text: indented, one table row a line."""
    rows = record["rows"]
    text = json.dumps({**record, "rows": "\0rows"}, indent=2, ensure_ascii=False)
    lines = ",\n".join(f"    {json.dumps(row, ensure_ascii=False)}" for row in rows)
    return text.replace('"\\u0000rows"', f"[\n{lines}\n  ]" if rows else "[]") + "\n"


def write_figures(
    args: argparse.Namespace,
    question: str,
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    variant: str | None = None,
    formats: Mapping[str, str] | None = None,
    units: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
    caveat: str | None = None,
    models: Sequence[Any] = (),
    settings: Mapping[str, Any] | None = None,
) -> Path | None:
    """Write one script's figures (schema in the module docstring) to `--out`, else to
    `benchmarks/results/<question>[.<variant>].json`; nothing with `--no-out`. Returns the
    path written."""
    if getattr(args, "no_out", False):
        return None
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"{question}: a row of {len(row)} cells for {len(columns)} columns")
    path = getattr(args, "out", None) or results_path(question, variant)
    record = {
        "schema": SCHEMA,
        "question": question,
        "variant": variant_name(variant) if variant else None,
        "title": title,
        "columns": list(columns),
        "rows": [[_cell(v) for v in row] for row in rows],
        "formats": dict(formats or {}),
        "units": dict(units or {}),
        "notes": list(notes),
        "caveat": caveat,
        "command": command_line(),
        "date": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "machine": machine(),
        "versions": versions(),
        "models": [model_info(m) for m in models],
        "settings": {k: _cell(v) for k, v in (settings or {}).items()},
        "source": "run",
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(record))
    print(f"figures: {path}", file=sys.stderr)
    return path
