"""Shared set-up for the benchmarks (outside pytest collection): data, model, timing."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from anvil_local import LLMTestCase

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "summeval.jsonl"


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help=f"SummEval JSONL (default: {DEFAULT_DATA})"
    )
    p.add_argument("--model", default=None, help="model name or GGUF path (default model)")
    return p


def summeval_cases(path: Path, articles: int, per_article: int = 16) -> list[LLMTestCase]:
    """The first `per_article` summaries of the first `articles` documents, in file order."""
    if not path.is_file():
        raise SystemExit(f"no SummEval data at {path}; pass --data")
    chosen: dict[str, list[LLMTestCase]] = {}
    for line in path.read_text().splitlines():
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


GEVAL_NAMES = ("coherence", "consistency", "fluency", "relevance")


def speed_workloads(data: Path, articles: int) -> list[tuple[str, list[LLMTestCase], list]]:
    """The shipped workloads the speed benchmarks share: the four SummEval G-Eval files on 16
    summaries of each of `articles` documents (alone, then as one panel), the
    model-at-every-node headings DAG on the meeting summaries, and the likelihood contrast on
    the SummEval cases."""
    from anvil_local.spec import load_metric, load_metrics

    summeval = summeval_cases(data, articles)
    meetings = [
        LLMTestCase(**json.loads(x))
        for x in (ROOT / "examples" / "meeting_summaries.jsonl").read_text().splitlines()
    ]
    return [
        ("4 G-Eval metrics, SummEval", summeval, [
            load_metric(ROOT / "examples" / "geval" / f"{n}.toml") for n in GEVAL_NAMES
        ]),
        ("4 G-Eval metrics as one panel, SummEval", summeval, load_metrics(
            ROOT / "examples" / "geval" / "summeval_panel.toml"
        )),
        ("headings DAG with a task node", meetings, [
            load_metric(ROOT / "examples" / "headings_llm.toml")
        ]),
        ("likelihood contrast, SummEval", summeval, [
            load_metric(ROOT / "examples" / "small_judge" / "likelihood_contrast.toml")
        ]),
    ]  # fmt: skip
