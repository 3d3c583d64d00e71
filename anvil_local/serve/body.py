"""From request bytes to a validated request, each failure one line.

Order of checks: the size (before reading past the limit), UTF-8, JSON (duplicate keys and
non-finite numbers refused, as the spec asks), an object at the top, then the schema.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from anvil_local.serve.errors import bad_request, invalid, too_large

M = TypeVar("M", bound=BaseModel)


def check_declared_size(content_length: str | None, limit: int) -> None:
    """Refuse a body whose declared length is over the limit before reading any of it."""
    if content_length is None:
        return
    try:
        declared = int(content_length)
    except ValueError:
        raise bad_request(f"Content-Length is not a number: {content_length[:40]!r}") from None
    if declared > limit:
        raise too_large(limit)


def parse_json(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object (see the module docstring for what is refused)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise bad_request(f"body is not UTF-8 (byte 0x{byte:02x} at offset {exc.start})") from None
    if not text.strip():
        raise bad_request("body is empty: send a JSON object")
    try:
        data = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite,
        )
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise bad_request(f"body is not valid JSON: {exc.msg} at {where}") from None
    except _Refused as exc:
        raise bad_request(str(exc)) from None
    except RecursionError:
        raise bad_request("body nests arrays or objects too deeply") from None
    except ValueError as exc:  # an integer of thousands of digits, say
        raise bad_request(f"body holds a value that cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise invalid(f"the body must be a JSON object, not {type(data).__name__}")
    return data


def validate(model: type[M], data: dict[str, Any]) -> M:
    """`data` as `model`, or the first schema error as one line naming where it is."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(describe(exc)) from None


def describe(exc: ValidationError) -> str:
    """The first error of a validation as one line: where it is and what is wrong."""
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in error["loc"] if not _is_union_member(p))
    kind = error["type"]
    if kind == "extra_forbidden":
        parent, _, field = where.rpartition(".")
        return f"unknown field {field!r}" + (f" in {parent}" if parent else "")
    if kind == "missing":
        return f"field {where!r} is required"
    if kind == "union_tag_invalid":
        tag = error.get("ctx", {}).get("tag", "?")
        expected = error.get("ctx", {}).get("expected_tags", "")
        return f"{where}: unknown question type {tag!r} (expected {expected})"
    if kind == "union_tag_not_found":
        return f"{where}: field 'type' is required"
    return f"{where}: {error['msg']}" if where else error["msg"]


def _is_union_member(part: object) -> bool:
    """pydantic names the union member it tried (`str`, `dict[str,any]`): not a place."""
    return isinstance(part, str) and (part in ("str", "int", "float", "bool") or "[" in part)


class _Refused(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _Refused(f"body has the key {key!r} twice in one object")
        data[key] = value
    return data


def _no_constant(name: str) -> Any:
    raise _Refused(f"body holds {name}, which is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"body holds {text}, which is not a finite number")
    return value
