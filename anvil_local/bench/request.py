"""A bench as asked for, end to end: what to score (a suite, or data + label + metric files),
the bench itself, then its outputs (fitted calibrations, report files, the Markdown).

`anvil bench` builds one `BenchRequest` from its options and calls `run_bench`; the
command only parses and prints."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anvil_local.errors import DataError, MissingExtra

if TYPE_CHECKING:
    from anvil_local.run.sinks import Sink


@dataclass(frozen=True)
class BenchRequest:
    """What to bench: `suite` (a shipped name or a suite file), or `data_file` with `label`
    and `metric_files`; on `models` (none: the default judge); limited to the first `docs`
    documents or `limit` cases; `report_dir` for the report files. With `fit_calibration`,
    each metric's fitted score -> label map is written into its metric file; with
    `abstain_precision`, each binary metric's abstention level is fitted and measured."""

    suite: str | None = None
    data_file: Path | None = None
    label: str | None = None
    metric_files: tuple[Path, ...] = ()
    models: tuple[str, ...] = ()
    limit: int | None = None
    docs: int | None = None
    report_dir: Path | None = None
    use_cache: bool = True
    threads: int | None = None
    fit_calibration: bool = False
    abstain_precision: float | None = None
    jobs: int = 1


def _need_bench_extra() -> None:
    try:
        import matplotlib  # noqa: F401
        import scipy  # noqa: F401
        import sklearn  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(
            f"anvil bench needs the bench extra ({exc.name} is missing): "
            "pip install 'anvil-local[bench]' (or pip install -e '.[bench]' in a checkout)"
        ) from exc


def _one_label_per_file(specs: Any) -> None:
    """A file gets one map per model, so it must be compared with one label only."""
    labels: dict[Path, str] = {}
    for spec in specs:
        seen = labels.setdefault(Path(spec.file).resolve(), spec.label)
        if seen != spec.label:
            raise DataError(
                f"{spec.file} is compared with two labels ({seen}, {spec.label}); "
                "--fit-calibration fits one map per metric file"
            )


def run_bench(request: BenchRequest, sinks: Sequence[Sink] = ()) -> str:
    """Run a bench and return its Markdown, followed by a line for each file written.
    `sinks` receive every line of every model's run (progress)."""
    _need_bench_extra()
    from anvil_local.bench.report import markdown, write_report
    from anvil_local.bench.run import bench
    from anvil_local.bench.suite import MetricSpec, load_suite, select
    from anvil_local.judge.settings import JudgeSettings
    from anvil_local.run.dataset import read_cases
    from anvil_local.run.evaluate import evaluate

    name = ""
    data_file, docs, limit = request.data_file, request.docs, request.limit
    if request.suite is not None:
        loaded = load_suite(request.suite)
        name = loaded.name
        if request.metric_files or request.label:
            raise DataError("--suite brings its own metrics and labels; drop --metric/--label")
        specs_in = list(loaded.metrics)
        data_file = data_file or loaded.data
        if docs is None and limit is None:
            docs, limit = loaded.docs, loaded.limit
    else:
        if data_file is None or request.label is None or not request.metric_files:
            raise DataError("give --suite NAME, or --data FILE --label labels.NAME --metric FILE")
        specs_in = [MetricSpec(file=Path(f), label=request.label) for f in request.metric_files]
    if request.fit_calibration:
        _one_label_per_file(specs_in)
    rows = select(read_cases(Path(data_file)), docs, limit)
    specs = [(metric, spec) for spec in specs_in for metric in spec.metrics()]
    if request.fit_calibration:
        panels = sorted({str(s.file) for m, s in specs if getattr(m, "panel", None)})
        if panels:
            raise DataError(
                f"{panels[0]} is a G-Eval panel: --fit-calibration writes maps into single "
                "metric files only"
            )

    run = functools.partial(
        evaluate,
        use_cache=request.use_cache,
        settings=JudgeSettings(threads=request.threads),
        sinks=sinks,
        jobs=request.jobs,
    )
    result = bench(
        rows,
        specs,
        list(request.models) or [None],
        run,
        suite=name,
        source=str(data_file),
        results_dir=request.report_dir,
        fit_calibration=request.fit_calibration,
        abstain_precision=request.abstain_precision,
    )
    text = markdown(result)
    if request.fit_calibration:
        from anvil_local.spec.files import write_calibration

        file_of = {metric.name: spec.file for metric, spec in specs}
        for fit in result.calibrations:
            write_calibration(file_of[fit.metric], fit.model, fit.entry.to_dict())
            text += (
                f"wrote the {fit.model} calibration of {fit.metric!r} to {file_of[fit.metric]}\n"
            )
    if request.report_dir is not None:
        paths = write_report(result, request.report_dir)
        text += f"\nreport: {paths['html']} (also {paths['json'].name}, {paths['markdown'].name})\n"
    return text


@dataclass(frozen=True)
class FitRequest:
    """A head to fit: `metric_file` judged on `data_file` by `model` (None: the default judge)
    against `label`, limited to `docs` documents or `limit` cases; with `write`, the head is
    written into the metric file for that model."""

    metric_file: Path
    data_file: Path
    label: str
    model: str | None = None
    folds: int = 5
    limit: int | None = None
    docs: int | None = None
    use_cache: bool = True
    threads: int | None = None
    write: bool = True


def run_fit(request: FitRequest, sinks: Sequence[Sink] = ()) -> str:
    """Judge the cases, fit and cross-validate the head (`bench.fit`), write it; the report
    as Markdown, followed by a line for the file written."""
    _need_bench_extra()
    import numpy as np

    from anvil_local.bench.fit import design, fit_report, markdown
    from anvil_local.bench.suite import document_of, label_name, labels_of, select
    from anvil_local.judge.settings import JudgeSettings
    from anvil_local.metrics.heads import features_of
    from anvil_local.models.resolve import resolve_model
    from anvil_local.run.dataset import read_cases
    from anvil_local.run.evaluate import evaluate
    from anvil_local.spec import load_metric
    from anvil_local.spec.files import write_calibration

    metric = load_metric(request.metric_file)
    rows = select(read_cases(request.data_file), request.docs, request.limit)
    source = str(request.data_file)
    human = labels_of(rows, request.label, source)
    model = resolve_model(request.model, JudgeSettings(threads=request.threads))
    outcome = evaluate(
        rows,
        [metric],
        model=model,
        use_cache=request.use_cache,
        include_reason=False,
        sinks=list(sinks),
    )
    by_case = {line.case_id: line for line in outcome.lines}
    kept = [
        (row, h)
        for row, h in zip(rows, human, strict=True)
        if row.case_id in by_case and by_case[row.case_id].result.error is None
    ]
    errors = len(rows) - len(kept)
    found = [features_of(by_case[row.case_id].result) for row, _ in kept]
    matrix = design(
        found,
        np.asarray([h for _, h in kept]),
        [document_of(row) for row, _ in kept],
        f"{request.metric_file}",
    )
    label = label_name(request.label)
    report = fit_report(
        matrix,
        model=model.name,
        sha256=model.sha256,
        metric=metric.name,
        label=label,
        source=f"{request.data_file.name}",
        folds=request.folds,
    )
    text = markdown(report)
    if errors:
        text += f"\n{errors} case(s) errored and were left out.\n"
    if request.write:
        write_calibration(request.metric_file, model.name, report.head.to_dict())
        text += f"\nwrote the {model.name} head of {metric.name!r} to {request.metric_file}\n"
    return text
