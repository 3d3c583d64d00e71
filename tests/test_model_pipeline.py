"""Every executor gives the same results on the real default model: in-process, the process
pool (--jobs 2), Ray in local mode with 2 CPUs, and shards joined by `anvil merge`; a
registered third-party metric kind runs under each of them."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from anvil_local import evaluate
from anvil_local.run.results import result_items
from tests.plugin_metric import KeywordMetric
from tests.test_pipeline import cases, gate, geval

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parent.parent


def read(path: Path) -> list[dict]:
    return result_items(path)  # the result lines, without the metadata line


def content(path: Path) -> list[tuple]:
    """What a run decided, pair by pair, in a fixed order: not timings, and not token
    counts (which depend on what the worker had just evaluated)."""

    def step(s: dict) -> dict:
        return {k: v for k, v in s.items() if k not in ("seconds", "tokens")}

    rows = []
    for line in read(path):
        trace = dict(line["trace"])
        if "path" in trace:
            trace["path"] = [step(s) for s in trace["path"]]
        rows.append(
            (
                line["position"],
                line["metric"],
                line["score"],
                line["success"],
                line["error"],
                json.dumps(trace, sort_keys=True),
                line["model_sha256"],
            )
        )
    return sorted(rows)


def metrics() -> list:
    return [geval(), gate(), KeywordMetric("Mentions", ["a summary", "a number"])]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory, default_model_path: Path) -> Path:
    out = tmp_path_factory.mktemp("local") / "local.jsonl"
    outcome = evaluate(cases(), metrics(), model=default_model_path, out=out, use_cache=False)
    assert len(outcome.lines) == 24 and not any(x.result.error for x in outcome.lines)
    return out


def test_the_process_pool_gives_the_in_process_results(tmp_path, local_run, default_model_path):
    out = tmp_path / "pool.jsonl"
    evaluate(cases(), metrics(), model=default_model_path, out=out, use_cache=False, jobs=2)
    assert content(out) == content(local_run)


def test_ray_in_local_mode_with_2_cpus_gives_the_in_process_results(
    tmp_path, local_run, default_model_path
):
    pytest.importorskip("ray", reason="the [ray] extra is part of the test install")
    from anvil_local.run.executors.ray import RayExecutor

    out = tmp_path / "ray.jsonl"
    outcome = evaluate(
        cases(),
        metrics(),
        model=default_model_path,
        out=out,
        use_cache=False,
        executor=RayExecutor(replicas=2, cpus=2),
    )
    assert not outcome.interrupted
    assert content(out) == content(local_run)


def test_shards_run_by_the_cli_and_merged_equal_the_unsharded_run(
    tmp_path, local_run, default_model_path
):
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in cases()))
    files = []
    for metric in metrics()[:2]:  # the built-in kinds, as metric files
        path = tmp_path / f"{metric.name}.json"
        path.write_text(json.dumps(metric.to_dict()))
        files += ["--metric", str(path)]
    parts = []
    for i in (1, 2):
        part = tmp_path / f"shard{i}.jsonl"
        command = [sys.executable, "-m", "anvil_local.cli", "eval", "--data", str(data), *files]
        command += ["--model", str(default_model_path), "--out", str(part), "--shard", f"{i}/2"]
        done = subprocess.run([*command, "--no-cache"], capture_output=True, text=True)
        assert done.returncode in (0, 1), done.stderr
        parts.append(str(part))
    merged = tmp_path / "merged.jsonl"
    command = [sys.executable, "-m", "anvil_local.cli", "merge", *parts, "--out", str(merged)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    whole = [x for x in content(local_run) if x[1] != "Mentions"]
    assert content(merged) == whole and all(len(read(Path(p))) > 0 for p in parts)


def test_measure_and_evaluate_share_one_loaded_model(real_data_dir: Path, monkeypatch):
    """By catalogue default in measure(), by path in evaluate(): one model in memory."""
    from anvil_local.judge import pool as pool_module

    fresh = pool_module.JudgePool()
    monkeypatch.setattr(pool_module, "_PROCESS_POOL", fresh)
    case = cases()[0]
    gate().measure(case)
    evaluate([case], [gate("Again")], model=str(real_data_dir), use_cache=False)
    assert len(fresh) == 1
    fresh.clear()
    assert len(fresh) == 0
