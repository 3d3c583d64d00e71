"""Metric files: one metric per TOML or JSON file; DeepEval DAG JSON is recognised too. A
G-Eval panel file (`type = "geval_panel"`) names several G-Eval files judged as one panel; a
features metric (`type = "features"`) and a chunked metric (`type = "chunked"`) may name their
members' files (relative to their own)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from anvil_local.errors import AnvilError, MetricFileError, io_error, not_utf8
from anvil_local.metrics.definitions import metric_definition, metric_from_dict
from anvil_local.spec import deepeval


def read_metric_dict(path: Path) -> dict[str, Any]:
    """The file's content as a metric dict (DeepEval DAG JSON converted)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise MetricFileError(f"{path}: no such metric file") from exc
    except UnicodeDecodeError as exc:
        raise MetricFileError(not_utf8(path, exc)) from exc
    except OSError as exc:
        raise MetricFileError(f"{path}: cannot read: {exc.strerror}") from exc
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            raise MetricFileError(f"{path}: metric files are .toml or .json")
    except tomllib.TOMLDecodeError as exc:
        raise MetricFileError(f"{path}: invalid TOML: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise MetricFileError(f"{path}: invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise MetricFileError(f"{path}: a metric file holds one object")
    if deepeval.is_deepeval_dag(data):
        try:
            data = deepeval.convert(data, name=data.get("name") or path.stem)
        except (AnvilError, ValueError) as exc:
            raise MetricFileError(f"{path}: {exc}") from exc
    if data.get("type") == FEATURES_KIND and isinstance(data.get("features"), list):
        data = {**data, "features": [_member(path, item) for item in data["features"]]}
    if data.get("type") == CHUNKED_KIND and isinstance(data.get("metric"), str):
        data = {**data, "metric": _member(path, data["metric"])}
    return data


def _member(path: Path, item: Any) -> Any:
    """A features or chunked metric's member: its table, or the definition in the file it
    names (without that file's own calibration: a head reads raw readings; nor its model:
    the metric around it is judged by one)."""
    if not isinstance(item, str):
        return item
    member = read_metric_dict(path.parent / item)
    if member.get("type") == PANEL_KIND:
        raise MetricFileError(f"{path}: feature {item}: a G-Eval panel cannot be a feature")
    return {k: v for k, v in member.items() if k not in ("calibration", "model")}


PANEL_KIND = "geval_panel"
FEATURES_KIND = "features"
CHUNKED_KIND = "chunked"


def load_metric(path: str | Path) -> Any:
    """A metric of any registered kind from a file; every error names the file (and node)."""
    path = Path(path)
    data = read_metric_dict(path)
    if data.get("type") == PANEL_KIND:
        raise MetricFileError(
            f"{path}: a G-Eval panel file holds several metrics: give it to `anvil eval` or "
            "`anvil bench` (in Python, load_metrics)"
        )
    return _metric_of(data, str(path))


def _metric_of(data: dict[str, Any], where: str) -> Any:
    """The metric a definition describes; an error names `where` it came from."""
    try:
        return metric_from_dict(data)
    except (AnvilError, ValueError, TypeError) as exc:
        raise MetricFileError(f"{where}: {exc}") from exc


def load_metrics(path: str | Path) -> list[Any]:
    """The metrics of a file: its one metric, or every member of a G-Eval panel file."""
    path = Path(path)
    data = read_metric_dict(path)
    if data.get("type") != PANEL_KIND:
        return [_metric_of(data, str(path))]  # the file is read once
    from anvil_local.metrics.geval import GEval, geval_panel

    unknown = sorted(set(data) - {"type", "members"})
    if unknown:
        raise MetricFileError(f"{path}: unknown geval_panel field(s): {', '.join(unknown)}")
    members = data.get("members")
    if not isinstance(members, list) or len(members) < 2:
        raise MetricFileError(f"{path}: 'members' must list two or more G-Eval metric files")
    metrics = []
    for member in members:
        if isinstance(member, str):
            where = f"{path}: member {member}"
            try:
                metric = load_metric(path.parent / member)
            except MetricFileError as exc:
                raise MetricFileError(f"{where}: {exc}") from exc
        elif isinstance(member, dict):
            where = f"{path}: member {member.get('name', '?')!r}"
            metric = _metric_of({"type": "geval", **member}, where)
        else:
            raise MetricFileError(f"{path}: each member is a file path or a G-Eval table")
        if not isinstance(metric, GEval):
            raise MetricFileError(f"{where}: a panel member must be a G-Eval metric")
        metrics.append(metric)
    try:
        return geval_panel(metrics)
    except (AnvilError, ValueError, TypeError) as exc:
        raise MetricFileError(f"{path}: {exc}") from exc


def dump_metric(metric: Any, path: str | Path) -> None:
    """Write a metric as JSON, with any fitted calibration (the TOML form is for hand-written
    files)."""
    data = metric_definition(metric)
    try:
        Path(path).write_text(
            json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    except OSError as exc:
        raise io_error(path, exc) from exc


def write_calibration(path: str | Path, model: str, entry: dict[str, Any]) -> None:
    """Put a fitted calibration map for `model` into a metric file, replacing that model's
    old map. A JSON file is rewritten; a TOML file keeps its text (comments included) and
    gets a `[calibration."MODEL"]` table at its end. The file is read back before it is
    replaced, and left as it was if the new text does not hold exactly this map."""
    path = Path(path)
    read_metric_dict(path)  # the file is a valid metric file now
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".json":
        data = json.loads(text)
        data.setdefault("calibration", {})[model] = entry
        new = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        header = f"[calibration.{json.dumps(model)}]"
        body = "\n".join(f"{key} = {_toml_value(value)}" for key, value in entry.items())
        new = _without_table(text, header).rstrip("\n") + f"\n\n{header}\n{body}\n"
    try:
        written = tomllib.loads(new) if path.suffix.lower() == ".toml" else json.loads(new)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise MetricFileError(f"{path}: cannot add the calibration table: {exc}") from exc
    if written.get("calibration", {}).get(model) != entry:
        raise MetricFileError(f"{path}: the calibration for {model!r} did not read back")
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)  # the metric file is left as it was
        raise io_error(path, exc) from exc


def _toml_value(value: Any) -> str:
    """A value of a fitted table as TOML (JSON's strings, numbers and lists are TOML too; a
    table becomes an inline table)."""
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    return json.dumps(value)


def _without_table(text: str, header: str) -> str:
    """The TOML text minus one table: its header line up to the next table header."""
    lines = text.splitlines(keepends=True)
    out, skipping = [], False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            skipping = stripped == header
        if not skipping:
            out.append(line)
    return "".join(out)
