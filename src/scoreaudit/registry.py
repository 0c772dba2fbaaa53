"""Plugin registries: one per kind, filled by decorators.

Every name an `.audit` file can call (operators, regions, measures,
covariates, scorers, arm sources, statistics, report sections) is an entry in
exactly one registry. An entry records the name, a pydantic parameter model,
a version string (part of every cache key, so bumping it invalidates cached
outputs) and the docstring that `scoreaudit describe` and `spec/language.md`
show. Kind-specific facts (an operator's identity dose and dose range, what a
statistic needs from an arm, whether a scorer needs a prompt) live in `meta`,
written once in the `register` call; everything that needs a fact reads it
with `fact()` (FACTS lists the known ones and their defaults), never from a
class attribute and never by testing a plugin's name.

This module imports nothing heavy: `scoreaudit check` loads every registry
without torch, scipy or OpenCV.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

KINDS = (
    "arm",
    "region",
    "measure",
    "covariate",
    "operator",
    "scorer",
    "statistic",
    "section",
    "probe",
    "probe_measure",
)


class Ref:
    """Annotation marker: a parameter that names something declared in the spec.

    Use as ``Annotated[str, Ref("region")]``. The compiler resolves the name
    against the spec's declarations of that kind (with did-you-mean) instead
    of passing an arbitrary string through. Kinds: region, operator, measure
    (a measure or covariate), covariate, arm, scorer, selection, column (a
    manifest column: checked at run time, when manifests are read), factor
    (one of the arm's declared factors), stratum (one of the arm's strata or
    any manifest column).
    """

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Ref({self.kind!r})"


class Params(BaseModel):
    """Base of every parameter model: frozen, and unknown arguments are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class NoParams(Params):
    """For plugins that take no arguments."""


class ColumnValue(Params):
    """`column(name)` in a spec: a per-image value read from the arm's manifest."""

    column: str


# Facts a plugin declares in its `register(...)` call, with the value an entry that omits one gets.
FACTS: dict[str, dict[str, Any]] = {
    "scorer": {
        "needs_prompt": False,  # score(images, prompts, items) reads a prompt per image
        "uses_item": False,  # the score depends on the ScoreItem (planted): cache keys include it
        "reads_data": False,  # scores are read from data (manifest columns, tables): no forward pass
        "data_params": (),  # reads_data: the parameters naming manifest columns; none given = tables only
        "requires": (),  # importable modules the implementation needs (torch, open_clip, ...)
        "differentiable": False,  # score_tensor(x, prompts) gives a score with gradients (probes need it)
        "takes_tensors": False,  # score() accepts uint8 H×W×3 torch tensors on the run's device (the tensor path)
        # combinations of arguments the parameter model accepts but no arm can read: a function
        # params -> [(argument, message, help)], reported by `check` at the argument (E0303)
        "param_problems": None,
        # arguments that cannot be read on an arm of one source: a function (params, "images" | "pairs")
        # -> (argument, message, help) | None, reported by `check` where a claim reads it there (E0807)
        "arm_problem": None,
    },
    "operator": {
        "identity": 0.0,  # the dose that returns the image unchanged
        "pixel_local": False,  # changes only pixels inside its region (`isolates: true`)
        "dose_range": None,
        "unit": "",
        "on_device": False,  # computes on the run's device (torch ops on CUDA): a Ray task running it needs a GPU
    },
    "measure": {"on_device": False},
    "covariate": {"on_device": False},
    "region": {"on_device": False},
}


@dataclass(frozen=True)
class PluginEntry:
    kind: str
    name: str
    params: type[Params]
    version: str
    doc: str
    impl: Any
    meta: Mapping[str, Any] = field(default_factory=dict)
    positional: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0] if self.doc.strip() else ""

    def validate(self, args: Mapping[str, Any]) -> Params:
        return self.params.model_validate(dict(args))

    def fact(self, name: str) -> Any:
        """A declared fact of this entry (FACTS gives the default when the entry omits it)."""
        if name in self.meta:
            return self.meta[name]
        return FACTS.get(self.kind, {}).get(name)


class Registry:
    """Name → PluginEntry for one kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, PluginEntry] = {}

    def register(
        self,
        name: str,
        *,
        params: type[Params] = NoParams,
        version: str = "1",
        positional: tuple[str, ...] = (),
        **meta: Any,
    ) -> Callable[[Any], Any]:
        """Decorator: record `obj` under `name` with its parameter model.

        `positional` names the parameters that may be given positionally, in
        order (e.g. `fidelity_index(light)` fills `operator`).
        """

        def decorate(obj: Any) -> Any:
            if name in self._entries and self._entries[name].impl is not obj:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            doc = inspect.getdoc(obj) or ""
            self._entries[name] = PluginEntry(
                kind=self.kind,
                name=name,
                params=params,
                version=str(version),
                doc=doc,
                impl=obj,
                meta=dict(meta),
                positional=tuple(positional),
            )
            return obj

        return decorate

    def get(self, name: str) -> PluginEntry:
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[PluginEntry]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def names(self) -> list[str]:
        return sorted(self._entries)


REGISTRIES: dict[str, Registry] = {kind: Registry(kind) for kind in KINDS}
arms = REGISTRIES["arm"]
regions = REGISTRIES["region"]
measures = REGISTRIES["measure"]
covariates = REGISTRIES["covariate"]
operators = REGISTRIES["operator"]
scorers = REGISTRIES["scorer"]
statistics = REGISTRIES["statistic"]
sections = REGISTRIES["section"]
probes = REGISTRIES["probe"]
probe_measures = REGISTRIES["probe_measure"]

_BUILTIN_MODULES = (
    "scoreaudit.plugins.arms",
    "scoreaudit.plugins.regions",
    "scoreaudit.plugins.operators",
    "scoreaudit.plugins.measures",
    "scoreaudit.plugins.scorers",
    "scoreaudit.plugins.statistics",
    "scoreaudit.plugins.comparisons",
    "scoreaudit.plugins.probes",
)
_loaded = False


def load_plugins(entry_points: bool = True) -> dict[str, Registry]:
    """Import the built-in plugin modules (and third-party entry points) once.

    Plugin modules import only light dependencies at module level; heavy ones
    (torch, open_clip, transformers) are imported inside factories.
    """
    global _loaded
    if not _loaded:
        for mod in _BUILTIN_MODULES:
            importlib.import_module(mod)
        if entry_points:
            from importlib.metadata import entry_points as eps

            for ep in eps(group="scoreaudit.plugins"):
                ep.load()
        _loaded = True
    return REGISTRIES


def fact(kind: str, plugin: str, name: str) -> Any:
    """`REGISTRIES[kind].get(plugin).fact(name)`, loading the plugins first."""
    load_plugins()
    return REGISTRIES[kind].get(plugin).fact(name)


def reads_data(plugin: str) -> bool:
    """A scorer whose numbers are read from data (manifest columns, tables): it costs no forward pass."""
    return bool(fact("scorer", plugin, "reads_data"))


def generated_arm(plugin: str) -> bool:
    """An arm source whose images the run makes (its `source` fact is "generate"): nothing is on disk
    before the run, its prompts and seeds say how many images it has."""
    load_plugins()
    return plugin in arms and arms.get(plugin).fact("source") == "generate"


def reads_tables_only(plugin: str, params: Mapping[str, Any]) -> bool:
    """A data-reading scorer given no column to read: its scores come only from precomputed tables."""
    return reads_data(plugin) and not any(params.get(p) for p in fact("scorer", plugin, "data_params"))


def lookup(name: str) -> list[PluginEntry]:
    """Every entry called `name`, across kinds (for `scoreaudit describe`)."""
    load_plugins()
    return [r.get(name) for r in REGISTRIES.values() if name in r]
