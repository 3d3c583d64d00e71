"""What produced a results file: its first line, `{"meta": {...}}`, written once.

A score means little without the judge, the metric's definition and the cases behind it, and
a comparison of two files means nothing when those differ unnoticed. So every results file
`anvil eval --out` writes starts with one metadata line:

```
{"meta": {"format": 1,
          "model": {"name": ..., "sha256": ...},
          "metrics": {"Coherence": {"sha256": ..., "definition": {...}}, ...},
          "runs": [{"anvil": "0.1.0", "llama_cpp": "0.3.36", "started": "...Z",
                    "data": {"sha256": ..., "cases": 16, "source": "cases.jsonl"},
                    "threads": 2, "batch_size": 512, "executor": "local", "jobs": 1,
                    "shard": "1/4"}, ...]}}
```

The model and the metrics are the file's identity: every line of a file was judged by one
model, and a metric name means one definition (its canonical form through the cache's
digest; the definition itself is kept so a viewer can draw a DAG). `runs` lists each run that
wrote lines into the file: a resumed run adds one, `anvil merge` joins the shards' lists. A
result line is told apart by having no "meta" key; files written before this line existed
have none and still read.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from anvil_local.cache import digest
from anvil_local.errors import DataError
from anvil_local.judge.model import ResolvedModel
from anvil_local.metrics.base import BaseMetric

META_KEY = "meta"
FORMAT = 1


def is_meta(item: Any) -> bool:
    """Whether a parsed line is the metadata line (a result line never has this key)."""
    return isinstance(item, dict) and META_KEY in item


def metric_sha256(metric: BaseMetric) -> str:
    """A metric's definition hash: its canonical form, as the result cache keys it."""
    return digest("metric", metric.to_dict())


def data_sha256(cases: Iterable[tuple[str, str]]) -> str:
    """The case data's hash over (case id, judged content) in file order."""
    return digest("cases", [list(pair) for pair in cases])


def _package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class MetricInfo:
    """A metric's definition hash and definition, and the judge that judged it where a run
    has several (name, sha256, and a decision server's URL)."""

    sha256: str
    definition: dict[str, Any] = field(default_factory=dict)
    judge: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {"sha256": self.sha256, "definition": self.definition}
        if self.judge is not None:
            data["judge"] = self.judge
        return data


@dataclass(frozen=True)
class DataInfo:
    sha256: str
    cases: int
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "cases": self.cases, "source": self.source}


@dataclass(frozen=True)
class RunInfo:
    """One run that wrote lines into the file: the software, the data, the settings."""

    anvil: str | None
    llama_cpp: str | None
    started: str
    data: DataInfo | None = None
    threads: int | None = None
    batch_size: int | None = None
    executor: str = ""
    jobs: int = 1
    shard: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "anvil": self.anvil,
            "llama_cpp": self.llama_cpp,
            "started": self.started,
            "data": self.data.to_dict() if self.data else None,
            "threads": self.threads,
            "batch_size": self.batch_size,
            "executor": self.executor,
            "jobs": self.jobs,
            "shard": self.shard,
        }

    @property
    def shard_count(self) -> int | None:
        return int(self.shard.split("/")[1]) if self.shard else None


@dataclass(frozen=True)
class RunMeta:
    """A results file's metadata: its identity (model, metrics) and the runs that wrote it."""

    model: str
    model_sha256: str
    metrics: dict[str, MetricInfo]
    runs: tuple[RunInfo, ...] = ()

    @property
    def last_run(self) -> RunInfo | None:
        return self.runs[-1] if self.runs else None

    def to_line(self) -> dict[str, Any]:
        return {
            META_KEY: {
                "format": FORMAT,
                "model": {"name": self.model, "sha256": self.model_sha256},
                "metrics": {name: info.to_dict() for name, info in self.metrics.items()},
                "runs": [run.to_dict() for run in self.runs],
            }
        }

    @classmethod
    def from_line(cls, item: dict[str, Any], where: str) -> RunMeta:
        """The metadata of a parsed line; a DataError naming `where` when it is malformed."""
        body = item.get(META_KEY)
        try:
            if not isinstance(body, dict):
                raise TypeError("not an object")
            number = body.get("format")
            if isinstance(number, int) and number > FORMAT:
                raise DataError(
                    f"{where}: metadata format {number} is newer than this anvil reads "
                    f"({FORMAT}); upgrade anvil-local"
                )
            model = body["model"]
            metrics = {
                str(name): MetricInfo(
                    str(info["sha256"]),
                    dict(info.get("definition") or {}),
                    dict(info["judge"]) if isinstance(info.get("judge"), dict) else None,
                )
                for name, info in body["metrics"].items()
            }
            runs = tuple(_run_from_dict(run) for run in body.get("runs") or ())
            return cls(str(model["name"]), str(model["sha256"]), metrics, runs)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(f"{where}: not a readable metadata line ({exc})") from None

    # -- consistency ------------------------------------------------------------------------

    def resumed_by(self, new: RunMeta, path: str | Path) -> RunMeta:
        """This file's metadata once `new` (the run resuming it) has written into it: each
        metric in both by the same judge and under the same definition; new metrics (on
        their own judges) and the run added. Judges are compared metric by metric, so a run
        of several judges resumed with some of its metrics, or with one more, is not refused
        for that."""
        before, now = self.judges(), new.judges()
        for name in now:
            if name in before and before[name]["sha256"] != now[name]["sha256"]:
                raise DataError(
                    f"{path} holds results of another model ({before[name]['name']}) for "
                    f"metric {name!r}; use another --out or remove the file"
                )
        metrics = _joined_metrics(
            [(str(path), self.metrics), ("this run", new.metrics)],
            "use another --out or remove the file",
        )
        judges = {**before, **now}
        distinct = list(dict.fromkeys(j["sha256"] for j in judges.values()))
        if len(distinct) == 1:
            return replace(self, metrics=metrics, runs=self.runs + new.runs)
        metrics = {
            name: info if info.judge is not None else replace(info, judge=judges[name])
            for name, info in metrics.items()
        }
        names = dict.fromkeys(j["name"] for j in judges.values())
        return RunMeta(
            "several judges: " + ", ".join(names),
            digest("judges", sorted([m, judges[m]["sha256"]] for m in metrics)),
            metrics,
            self.runs + new.runs,
        )

    def judges(self) -> dict[str, dict[str, Any]]:
        """Each metric's judge (`name`, `sha256`): its own where recorded, else the file's."""
        return {
            name: info.judge or {"name": self.model, "sha256": self.model_sha256}
            for name, info in self.metrics.items()
        }


def _run_from_dict(data: dict[str, Any]) -> RunInfo:
    raw = data.get("data")
    info = (
        DataInfo(str(raw["sha256"]), int(raw.get("cases") or 0), str(raw.get("source") or ""))
        if isinstance(raw, dict)
        else None
    )
    return RunInfo(
        anvil=data.get("anvil"),
        llama_cpp=data.get("llama_cpp"),
        started=str(data.get("started") or ""),
        data=info,
        threads=data.get("threads"),
        batch_size=data.get("batch_size"),
        executor=str(data.get("executor") or ""),
        jobs=int(data.get("jobs") or 1),
        shard=data.get("shard"),
    )


def _joined_metrics(
    sources: Sequence[tuple[str, dict[str, MetricInfo]]], advice: str
) -> dict[str, MetricInfo]:
    """Every metric of every source; a name with two definitions is refused."""
    joined: dict[str, MetricInfo] = {}
    seen_in: dict[str, str] = {}
    for where, metrics in sources:
        for name, info in metrics.items():
            held = joined.get(name)
            if held is None:
                joined[name], seen_in[name] = info, where
            elif held.sha256 != info.sha256:
                raise DataError(
                    f"metric {name!r} has two definitions: {held.sha256[:12]} in "
                    f"{seen_in[name]}, {info.sha256[:12]} in {where}; {advice}"
                )
    return joined


def merged(metas: Sequence[tuple[str, RunMeta]]) -> RunMeta:
    """The metadata of shard files joined by `anvil merge`: one model, one definition per
    metric, the same case data and shard count in each file's latest run; runs joined."""
    advice = "merge only the shards of one run"
    first_where, first = metas[0]
    for where, meta in metas[1:]:
        if meta.model_sha256 != first.model_sha256:
            raise DataError(
                f"{first_where} and {where} were judged by different models: {first.model} "
                f"(sha256 {first.model_sha256[:12]}) and {meta.model} "
                f"(sha256 {meta.model_sha256[:12]}); {advice}"
            )
    metrics = _joined_metrics([(where, meta.metrics) for where, meta in metas], advice)
    _same_latest(metas, "case data", lambda run: run.data.sha256 if run.data else None, advice)
    _same_latest(metas, "shard count", lambda run: run.shard_count, advice)
    runs: list[RunInfo] = []
    for _, meta in metas:
        runs += [run for run in meta.runs if run not in runs]
    return RunMeta(first.model, first.model_sha256, metrics, tuple(runs))


def _same_latest(metas: Sequence[tuple[str, RunMeta]], what: str, key: Any, advice: str) -> None:
    found: dict[Any, str] = {}
    for where, meta in metas:
        if meta.last_run is not None:
            found.setdefault(key(meta.last_run), where)
    if len(found) > 1:
        places = ", ".join(f"{value} in {where}" for value, where in found.items())
        raise DataError(f"the files were run on different {what}: {places}; {advice}")


def judge_info(model: ResolvedModel) -> dict[str, Any]:
    """How the metadata names a judge: its name and sha256, and its decision servers."""
    info: dict[str, Any] = {"name": model.name, "sha256": model.sha256}
    if model.remote:
        info["servers"] = [spec.url for spec in model.remote]
    return info


def run_meta(
    model: ResolvedModel | dict[str, ResolvedModel],
    metrics: Sequence[BaseMetric],
    cases: Iterable[tuple[str, str]],
    *,
    count: int,
    source: str = "",
    executor: str = "",
    jobs: int = 1,
    shard: str | None = None,
) -> RunMeta:
    """The metadata of a run about to start: `cases` are the (case id, content key) of every
    case asked for, before any shard is cut, so the shards of one run agree. `model` is the
    run's judge, or each metric's by name: with one judge the file names it (as always);
    with several it names them all and each metric its own, and the file's judge sha256 is
    a hash over them, so a resume or `anvil compare` sees any metric's judge change."""
    from anvil_local.judge.native import llama_cpp_version

    judges = model if isinstance(model, dict) else {m.name: model for m in metrics}
    distinct = list(dict.fromkeys(judges.values()))
    model = distinct[0] if distinct else model  # type: ignore[assignment]
    assert isinstance(model, ResolvedModel)

    run = RunInfo(
        anvil=_package_version("anvil-local"),
        llama_cpp=llama_cpp_version(),
        started=_now(),
        data=DataInfo(data_sha256(cases), count, source),
        threads=model.settings.threads,
        batch_size=model.settings.n_batch,
        executor=executor,
        jobs=jobs,
        shard=shard,
    )
    several = len(distinct) > 1 or model.remote
    infos = {
        m.name: MetricInfo(
            metric_sha256(m), m.to_dict(), judge_info(judges[m.name]) if several else None
        )
        for m in metrics
    }
    if len(distinct) == 1:
        return RunMeta(model.name, model.sha256, infos, (run,))
    name = "several judges: " + ", ".join(j.name for j in distinct)
    sha = digest("judges", sorted([m.name, judges[m.name].sha256] for m in metrics))
    return RunMeta(name, sha, infos, (run,))
