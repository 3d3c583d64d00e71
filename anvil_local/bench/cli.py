"""The glue behind `anvil bench`: what to score (a suite, or --data/--label/--metric), then
bench, then the outputs. Kept out of cli.py so that the command stays parse-call-render."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from anvil_local.errors import DataError, MissingExtra


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


def run_bench(
    *,
    suite: str | None,
    data_file: Path | None,
    label: str | None,
    metric_files: tuple[Path, ...],
    models: tuple[str, ...],
    limit: int | None,
    docs: int | None,
    report_dir: Path | None,
    use_cache: bool,
    threads: int | None = None,
    progress: Any = None,
    fit_calibration: bool = False,
) -> str:
    """Run a bench and return its Markdown; write the report files when asked. With
    `fit_calibration`, each metric's fitted map is written into its metric file."""
    _need_bench_extra()
    from anvil_local.bench.report import markdown, write_report
    from anvil_local.bench.run import bench
    from anvil_local.bench.suite import MetricSpec, load_suite, select
    from anvil_local.run.dataset import read_cases
    from anvil_local.run.evaluate import evaluate

    name = ""
    if suite is not None:
        loaded = load_suite(suite)
        name = loaded.name
        if metric_files or label:
            raise DataError("--suite brings its own metrics and labels; drop --metric/--label")
        specs_in = list(loaded.metrics)
        data_file = data_file or loaded.data
        if docs is None and limit is None:
            docs, limit = loaded.docs, loaded.limit
    else:
        if data_file is None or label is None or not metric_files:
            raise DataError("give --suite NAME, or --data FILE --label labels.NAME --metric FILE")
        specs_in = [MetricSpec(file=Path(f), label=label) for f in metric_files]
    if fit_calibration:
        _one_label_per_file(specs_in)
    rows = select(read_cases(Path(data_file)), docs, limit)
    specs = [(metric, spec) for spec in specs_in for metric in spec.metrics()]
    if fit_calibration:
        panels = sorted({str(s.file) for m, s in specs if getattr(m, "panel", None)})
        if panels:
            raise DataError(
                f"{panels[0]} is a G-Eval panel: --fit-calibration writes maps into single "
                "metric files only"
            )

    def on_line(line: Any, done: int, total: int) -> None:
        if progress is not None:
            progress.update(done, total)

    from anvil_local.judge.settings import JudgeSettings

    settings = JudgeSettings(threads=threads)
    run = functools.partial(evaluate, use_cache=use_cache, settings=settings)
    result = bench(
        rows,
        specs,
        list(models) or [None],
        run,
        suite=name,
        source=str(data_file),
        results_dir=report_dir,
        on_line=on_line,
        fit_calibration=fit_calibration,
    )
    text = markdown(result)
    if fit_calibration:
        from anvil_local.spec.files import write_calibration

        file_of = {metric.name: spec.file for metric, spec in specs}
        for fit in result.calibrations:
            write_calibration(file_of[fit.metric], fit.model, fit.entry.to_dict())
            text += (
                f"wrote the {fit.model} calibration of {fit.metric!r} to {file_of[fit.metric]}\n"
            )
    if report_dir is not None:
        paths = write_report(result, report_dir)
        text += f"\nreport: {paths['html']} (also {paths['json'].name}, {paths['markdown'].name})\n"
    return text
