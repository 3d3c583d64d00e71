"""The registries of metric kinds, DAG node kinds and checks: one generic type, three
instances, each extensible by third-party packages.

Everything that turns a name from a metric file into an object goes through one of them. A
new entry is one module plus its registration:

    from anvil_local.registry import register_check, register_metric

    @register_metric("keyword")
    class KeywordMetric(BaseMetric): ...

    @register_check("shouting")
    def shouting(text, source=None): ...

A registry imports the modules that define its built-in entries, then every entry point of
its group, the first time it is asked for an entry (by module name: this module imports no
metric code, so it sits below the metrics). A third-party package registers without the
user importing it:

    [project.entry-points."anvil_local.metrics"]   # or anvil_local.nodes, anvil_local.checks
    keyword = "my_package.metrics"                 # a module whose import registers, or a callable

What an entry must be (a metric kind's accepted keys, a node kind's fields) is the entry's
own business, not the registry's.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from anvil_local.errors import AnvilError, DataError, MetricDefinitionError

log = logging.getLogger(__name__)

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries of one sort by name, in registration order (built-ins first)."""

    def __init__(
        self,
        sort: str,
        group: str,
        builtins: Sequence[str] = (),
        unknown: type[AnvilError] = DataError,
    ) -> None:
        self.sort = sort  # how messages name an entry: "metric type", "check", ...
        self.group = group  # the entry-point group third-party packages register under
        self._builtins = tuple(builtins)
        self._unknown = unknown  # the error an unknown name raises
        self._entries: dict[str, T] = {}
        self._loaded = False

    def add(self, name: str, entry: T) -> T:
        """Register `entry` under `name`. The same definition imported twice (a module
        reloaded, a worker re-importing it) replaces itself; two different ones clash."""
        existing = self._entries.get(name)
        if existing is not None and existing is not entry and _origin(existing) != _origin(entry):
            raise AnvilError(
                f"{self.sort} {name!r} is registered twice "
                f"({_origin(existing)} and {_origin(entry)})"
            )
        self._entries[name] = entry
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of `add`."""

        def decorate(entry: T) -> T:
            return self.add(name, entry)

        return decorate

    def load(self) -> None:
        """Import the built-in modules and every entry point of the group, once per process.
        A broken plugin is logged and skipped: it must not take the built-ins down."""
        if self._loaded:
            return
        self._loaded = True
        for module in self._builtins:
            importlib.import_module(module)
        for entry in entry_points(group=self.group):
            try:
                loaded = entry.load()
            except Exception as exc:
                log.warning("plugin %s (%s) could not be loaded: %s", entry.name, self.group, exc)
                continue
            if callable(loaded) and not isinstance(loaded, type):
                loaded()

    def get(self, name: object) -> T:
        """The entry called `name`; an unknown name raises this registry's error, listing
        the names it knows."""
        self.load()
        if not isinstance(name, str) or name not in self._entries:
            raise self._unknown(
                f"unknown {self.sort} {name!r} (expected one of: {', '.join(sorted(self))})"
            )
        return self._entries[name]

    def find(self, name: object) -> T | None:
        """The entry called `name`, or None."""
        self.load()
        return self._entries.get(name) if isinstance(name, str) else None

    def entries(self) -> dict[str, T]:
        """Every entry, by name, in registration order."""
        self.load()
        return dict(self._entries)

    def __contains__(self, name: object) -> bool:
        return self.find(name) is not None

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self.load()
        return len(self._entries)


def _origin(entry: object) -> str:
    """Where an entry was defined: module and qualified name."""
    target = entry if isinstance(entry, type) or callable(entry) else type(entry)
    for field in ("cls", "fn"):  # a record that wraps a class or a function
        wrapped = getattr(entry, field, None)
        if wrapped is not None and not isinstance(entry, type):
            target = wrapped
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}"


# -- the three registries ----------------------------------------------------------------


@dataclass(frozen=True)
class NodeKind:
    """How one DAG node type reads from and writes to a metric file's node table."""

    name: str
    cls: type
    fields: frozenset[str]  # keys a node spec of this type may hold


ENTRY_POINT_GROUP = "anvil_local.metrics"

METRIC_KINDS: Registry[type] = Registry(
    "metric type",
    ENTRY_POINT_GROUP,
    builtins=(
        "anvil_local.metrics.geval",
        "anvil_local.metrics.dag.metric",
        "anvil_local.metrics.code",
        "anvil_local.metrics.likelihood",
        "anvil_local.metrics.features",
        "anvil_local.metrics.chunked",
        "anvil_local.metrics.hidden_state",
        "anvil_local.metrics.conversational",
        "anvil_local.metrics.arena",
        "anvil_local.metrics.rag",
    ),
)
NODE_KINDS: Registry[NodeKind] = Registry(
    "node type",
    "anvil_local.nodes",
    builtins=("anvil_local.metrics.dag.nodes", "anvil_local.metrics.dag.code"),
)
#: The node types of a conversational DAG: the same names as NODE_KINDS, the nodes reading
#: a conversation (and an optional `turn_window`) instead of a single-turn case.
CONVERSATIONAL_NODE_KINDS: Registry[NodeKind] = Registry(
    "conversational node type",
    "anvil_local.conversational_nodes",
    builtins=(
        "anvil_local.metrics.conversational.nodes",
        "anvil_local.metrics.conversational.code",
    ),
)


@dataclass(frozen=True)
class CheckKind:
    """A check: `fn(text, source, **args) -> bool | float` (`source` is the second text a
    check compares with, else None), and what checks its arguments when a metric file is
    loaded (`validate(**args)`, raising a definition error), so a bad pattern or schema is
    bad input up front instead of an error on every case."""

    name: str
    fn: Callable[..., Any]
    validate: Callable[..., None] | None = None


CHECKS: Registry[CheckKind] = Registry(
    "check",
    "anvil_local.checks",
    builtins=("anvil_local.metrics.checks",),
    unknown=MetricDefinitionError,
)


def register_metric(kind: str) -> Callable[[type[T]], type[T]]:
    """Class decorator: `kind` is the `type` of the metric's dict."""

    def decorate(cls: type[T]) -> type[T]:
        cls.kind = kind  # type: ignore[attr-defined]
        METRIC_KINDS.add(kind, cls)
        return cls

    return decorate


def register_node(
    kind: str, fields: set[str] | frozenset[str], conversational: bool = False
) -> Callable[[type[T]], type[T]]:
    """Class decorator for a DAG node type: `kind` is its `type` in a node table, `fields`
    the keys its spec may hold (declared once, beside the class); `conversational` for a
    node of a conversational DAG."""

    def decorate(cls: type[T]) -> type[T]:
        cls.kind = kind  # type: ignore[attr-defined]
        registry = CONVERSATIONAL_NODE_KINDS if conversational else NODE_KINDS
        registry.add(kind, NodeKind(kind, cls, frozenset(fields) | {"type"}))
        return cls

    return decorate


def register_check(
    name: str, validate: Callable[..., None] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Function decorator: the check a metric file names `name`; `validate(**args)` checks
    its arguments at load time (their names are always checked against the signature)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        CHECKS.add(name, CheckKind(name, fn, validate))
        return fn

    return decorate
