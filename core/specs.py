"""Attack specs: the one interface every computation shares, and the field metadata it reads.

A spec is a typed config dataclass in and a typed result dataclass out::

    result = spec.run(config, progress=progress, cancel=cancel)   # see core.runtime

Config fields declare their help text and range with ``param``; the CLI generator
(``core.commands``) and the pages' form helper (``ui.forms``) read it, so no default, range or
help text is typed twice. ``check_params`` (called from a config's ``__post_init__``) enforces
the ranges with a message that states them::

    @dataclass(frozen=True)
    class MyConfig:
        samples: int = param(1000, ge=1, le=500_000, help="samples to draw")
        strategies: tuple[Literal["a", "b"], ...] = param(("a",), help="which to run")

        def __post_init__(self):
            check_params(self)
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

from core.errors import UserError

MODEL_HELP = "a loaded model's name or a model source (folder, .zip, .gguf, hub id, named source)"
PATH_KINDS = ("data", "model", "folder", "output")
PAGE_PLACES = ("main", "advanced", "hidden")   # where a page's form shows a field
INT64 = (-2**63, 2**63 - 1)  # the range of a whole number that declares no bound of its own


def param(default: Any = dataclasses.MISSING, *, help: str, label: str | None = None,
          ge: float | None = None, le: float | None = None, gt: float | None = None,
          lt: float | None = None, flags: tuple[str, ...] = (), widget: str | None = None,
          options: tuple = (), step: float | None = None, path: str | None = None,
          unset: float | None = None, page: str = "main",
          choices: Callable[[], tuple[str, ...]] | None = None) -> Any:
    """A config field with its help text, its range (``ge``/``gt`` <= value <= ``le``/``lt``),
    a value ``unset`` accepted besides the range that means "not given" (σ = 0: no DP run),
    optional CLI ``flags`` users know (e.g. ``("--n",)``), and a page ``widget`` hint
    ("slider" by ``step``, "select_slider" over ``options``, "text_area", "radio";
    "verbatim_lines": a text area whose lines are kept as typed, leading spaces included).

    Numbers must be finite, and whole numbers within int64 where no bound is declared.
    ``path`` says what a text field names, so the CLI checks it before a run starts: "data" (a
    file ``core.readers.data`` reads, or a named data source), "model" (a model source), "folder" (an
    existing folder) or "output" (a file to write); an empty value is left to the config.
    ``page`` says where a page's form shows the field: "main", "advanced" (folded away) or
    "hidden" (left at its default). ``choices``: the values a text field (or each item of a
    tuple of texts) may take, asked when a config is checked and a form drawn, not at import
    (e.g. the audited attacks, a plug-in's included)."""
    if path not in (None, *PATH_KINDS):
        raise ValueError(f"path must be one of {PATH_KINDS}, not {path!r}")
    if page not in PAGE_PLACES:
        raise ValueError(f"page must be one of {PAGE_PLACES}, not {page!r}")
    metadata = {"help": help, "label": label, "ge": ge, "le": le, "gt": gt, "lt": lt,
                "flags": flags, "widget": widget, "options": options, "step": step, "path": path,
                "unset": unset, "page": page, "choices": choices}
    if isinstance(default, (list, dict, set)):
        raise TypeError("use a tuple for a sequence default")
    return dataclasses.field(default=default, metadata=metadata)


def page_fields(config_type: type) -> dict[str, list[str]]:
    """The fields a page's form shows for ``config_type``, by place ("main", "advanced"), in
    declaration order. A path is never a plain form field (a page picks a model or a data
    source with its own widget; a folder or an output on the server is not a page user's to
    name) and a "hidden" field is left out."""
    places: dict[str, list[str]] = {"main": [], "advanced": []}
    for field in dataclasses.fields(config_type):
        meta = field.metadata
        if "help" in meta and not meta.get("path") and meta.get("page", "main") in places:
            places[meta.get("page", "main")].append(field.name)
    return places


def path_fields(config_type: type, kind: str) -> list[dataclasses.Field]:
    """The fields of ``config_type`` that name a path of ``kind`` ("model", "data", ...: their
    ``param(path=...)``), in declaration order."""
    return [f for f in dataclasses.fields(config_type) if f.metadata.get("path") == kind]


def field_label(field: dataclasses.Field, *, capital: bool = False) -> str:
    """A field's label for people: its ``label`` metadata, else its name in words; with
    ``capital`` its first letter upper-cased (the rest kept: "digits T" -> "Digits T")."""
    label = field.metadata.get("label") or field.name.replace("_", " ")
    if not capital or not label[:1].isascii():   # σ stays σ, not Σ
        return label
    return label[:1].upper() + label[1:]


def _number(value: float) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if abs(value) < 10**20 else f"{Decimal(value):.3e}"
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def describe_bounds(bounds: dict) -> str:
    """``"from 1 to 500,000"``, ``"above 0"``, ``"at least 0 and below 100"`` ("" if no range)
    for a dict of ``ge``/``gt``/``le``/``lt`` (missing or None: no such bound)."""
    ge, gt, le, lt = (bounds.get(k) for k in ("ge", "gt", "le", "lt"))
    if ge is not None and le is not None:
        return f"from {_number(ge)} to {_number(le)}"
    low = f"at least {_number(ge)}" if ge is not None else (
        f"above {_number(gt)}" if gt is not None else "")
    high = f"at most {_number(le)}" if le is not None else (
        f"below {_number(lt)}" if lt is not None else "")
    return " and ".join(part for part in (low, high) if part)


def describe_range(field: dataclasses.Field, bounds: dict | None = None) -> str:
    """The range a field declares (or ``bounds``), in words (see ``describe_bounds``), with its
    ``unset`` value first: ``"0 or from 0.2 to 1,000"``."""
    span = describe_bounds(field.metadata if bounds is None else bounds)
    unset = field.metadata.get("unset")
    return span if unset is None else f"{_number(unset)} or {span}"


def in_bounds(value: float, bounds: dict) -> bool:
    """Whether ``value`` meets every bound of ``bounds`` (``ge``/``gt``/``le``/``lt``)."""
    return ((bounds.get("ge") is None or value >= bounds["ge"])
            and (bounds.get("gt") is None or value > bounds["gt"])
            and (bounds.get("le") is None or value <= bounds["le"])
            and (bounds.get("lt") is None or value < bounds["lt"]))


def _int_bounds(meta: dict) -> dict:
    """A whole number's bounds: those declared, int64 on a side that declares none."""
    bounds = dict(meta)
    if bounds.get("ge") is None and bounds.get("gt") is None:
        bounds["ge"] = INT64[0]
    if bounds.get("le") is None and bounds.get("lt") is None:
        bounds["le"] = INT64[1]
    return bounds


def optional_inner(kind: Any) -> Any | None:
    """``X`` for ``X | None``, else None."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        inner = [k for k in typing.get_args(kind) if k is not type(None)]
        return inner[0] if len(inner) == 1 else None
    return None


def field_choices(field: dataclasses.Field, kind: Any) -> tuple | None:
    """The values a field (or an item of it, ``kind`` being the item's type) may take: a
    Literal's, or a text's ``param(choices=...)`` asked now; None when any value of its type is."""
    if typing.get_origin(kind) is typing.Literal:
        return typing.get_args(kind)
    choices = field.metadata.get("choices")
    return tuple(choices()) if kind is str and choices is not None else None


def check_value(field: dataclasses.Field, kind: Any, value: Any) -> None:
    """A ``UserError`` naming the field and its range when ``value`` does not fit ``kind``."""
    name, origin = field_label(field), typing.get_origin(kind)
    if optional_inner(kind) is not None:
        if value is not None:
            check_value(field, optional_inner(kind), value)
        return
    allowed = field_choices(field, kind)
    if allowed is not None and value not in allowed:
        raise UserError(f"{name}: choose one of {', '.join(map(str, allowed))}, not {value!r}")
    if origin is tuple:
        for item in value:
            check_value(field, typing.get_args(kind)[0], item)
        return
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        span = describe_range(field, _int_bounds(field.metadata))
        raise UserError(f"{name}: expected a whole number {span}, got {value!r}")
    if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))
                          or not math.isfinite(value)):
        raise UserError(f"{name}: expected a finite number, got {value!r}")
    bounds = _int_bounds(field.metadata) if kind is int else field.metadata
    if (kind in (int, float) and not in_bounds(value, bounds)
            and value != field.metadata.get("unset")):
        raise UserError(f"{name} must be {describe_range(field, bounds)}, not {_number(value)}")


def check_params(config: Any) -> None:
    """Check every ``param`` field of ``config`` against its type and range (``UserError``)."""
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        if "help" in field.metadata:
            check_value(field, hints[field.name], getattr(config, field.name))


def config_uses_gpu(config: Any) -> bool:
    """Whether a run of ``config`` takes the GPU: its ``device`` field is cuda, or auto with CUDA."""
    device = getattr(config, "device", None)
    if device == "auto":
        import torch  # only configs that name a device run on torch

        return torch.cuda.is_available()
    return device == "cuda"


def scalar_fields(result: Any) -> dict[str, Any]:
    """The top-level numbers of a result dataclass: the headline metrics Compare puts side by side."""
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
            if isinstance(getattr(result, f.name), (int, float))
            and not isinstance(getattr(result, f.name), bool)}


@dataclass(frozen=True)
class AuditHooks:
    """What the audit (``core.audit``) needs of an attack that it may run: declared beside the
    attack's spec (``AttackSpec.audit``), so the audit loops over the specs that have them.

    ``needs``: the audit's inputs that must be given for it to run (of ``model``,
    ``reference``, ``corpus``, ``users``, ``members``); ``fields``: the attack's config field ->
    the audit input it takes; ``verdict``: its result in plain words; ``section``: its part of
    the HTML report (``core.reporting.html`` helps); ``series``: headline metric -> what it
    measures, drawn against the training step by the audit of a checkpoint series; ``order``:
    its place in the audit and its report (lower first)."""

    needs: tuple[str, ...]
    fields: dict[str, str]
    verdict: Callable[[Any], str]
    section: Callable[[Any], str]
    series: dict[str, str]
    order: int = 100

    def __post_init__(self):
        missing = set(self.needs) - set(self.fields.values())
        if missing:
            raise TypeError(f"audit hooks must map every input they need to a config field "
                            f"(unmapped: {sorted(missing)})")


@dataclass(frozen=True)
class AttackSpec:
    """One registry entry: what the computation is called and how to run it."""

    name: str                         # registry key, stored run kind and CLI command
    title: str                        # shown in the app
    config_type: type                 # the config dataclass
    result_type: type                 # the result dataclass (runs are read back as it)
    run: Callable[..., Any]           # run(config, *, progress=no_progress, cancel=None)
    tiny_config: Callable[[], Any]    # a config that runs in seconds on a CPU
    uses_gpu: Callable[[Any], bool] = config_uses_gpu
    headline: Callable[[Any], dict] = scalar_fields   # metrics Compare shows side by side
    describe: Callable[[Any], str] | None = None      # a run's title from its config
    table: str | None = None          # the result field holding its main table (CSV export)
    audit: AuditHooks | None = None   # set: the audit may run it (``AuditHooks``)
    cost: Callable[[Any], Any] | None = None   # its work before Run (``core.cost``'s Plan)

    def described(self, config: Any) -> str:
        """A run's title from its config: its ``describe``, else the spec's title."""
        return self.describe(config) if self.describe else self.title

    def __post_init__(self):
        if self.audit is not None:
            names = {f.name for f in dataclasses.fields(self.config_type)}
            unknown = set(self.audit.fields) - names
            if unknown:
                raise TypeError(f"{self.name}: audit hooks name no config field {sorted(unknown)}")
            headline = {f.name for f in dataclasses.fields(self.result_type)}
            if self.headline is scalar_fields and set(self.audit.series) - headline:
                raise TypeError(f"{self.name}: series metrics not in its headline")
