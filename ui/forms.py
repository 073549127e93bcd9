"""Forms built from a spec's config fields, so a page never re-types a default, range or help::

    config, error = config_form(SPEC, key="dlg", fields=("batch_size", "objective"),
                                values={"model": picked.name})
    run_button(SPEC, config, error, key="dlg")   # disabled with the message while invalid

Each field gets the widget its type calls for (number input, toggle, select box, multiselect,
text input; or the ``widget`` hint of its ``param``: slider, select_slider, radio, text_area,
which for a tuple takes one value per line, and is laid out below the columns, full width),
with the field's default, label and help (its range included). Number inputs take any number
(a whole-number field's too: 1.5 or 1e308 reach its check, not 1) and the config decides: an
out-of-range value keeps Run disabled, and the message states the range. ``values`` sets
fields the page fills itself (model pickers, files) or new defaults; a data file among them
that is missing, empty or does not read keeps Run disabled too (``ui.documents.data_error``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import typing
from collections.abc import Sequence
from typing import Any

import streamlit as st

from core.cli_input import read_value, word_reader
from core.errors import UserError
from core.specs import (AttackSpec, describe_range, field_choices, field_label, optional_inner,
                        page_fields)
from ui.cost import cost_gate
from ui.documents import data_error
from ui.jobs import job_panel, start_job
from ui.render import render_result
from ui.text import plain


def _help(field: dataclasses.Field) -> str:
    span = describe_range(field)
    return field.metadata.get("help", "") + (f" ({span})" if span else "")


def _slider(field: dataclasses.Field, kind: Any, value: Any, key: str, disabled: bool) -> Any:
    """A slider over the field's range (an open upper end stops one step short of it)."""
    meta = field.metadata
    low = meta["ge"] if meta.get("ge") is not None else meta["gt"]
    step = meta.get("step") or (1 if kind is int else 0.01)
    high = meta["le"] if meta.get("le") is not None else meta["lt"] - step
    cast = int if kind is int else float
    return st.slider(field_label(field, capital=True), cast(low), cast(high), cast(value),
                     step=cast(step), key=key, help=_help(field), disabled=disabled)


def _shown(item: Any) -> str:
    """A list item as the user would type it: 2.0 as "2", 2.875 as "2.875" (a float that
    "%g" would round keeps all its digits)."""
    if isinstance(item, float) and float(f"{item:g}") == item:
        return f"{item:g}"
    return str(item)


def _value_list(label: str, kind: type, value: tuple, key: str, help_text: str,
                disabled: bool, per_line: bool | str) -> tuple:
    """A text input of comma-separated values (numbers or words), or with ``per_line`` a text
    area of one value per line (sentences, which hold commas; ``per_line == "verbatim"``: each
    line as typed, spaces included, as a suffix after its prefix starts with its space); a
    value that does not read as ``kind`` is a ``UserError``."""
    what = "words" if kind is str else "numbers"
    if per_line:
        text = st.text_area(label, "\n".join(map(_shown, value)), key=key, disabled=disabled,
                            help=f"{help_text}; one per line")
        items, how = text.splitlines(), "one per line"
    else:
        text = st.text_input(label, ", ".join(map(_shown, value)), key=key, disabled=disabled,
                             help=f"{help_text}; separate the {what} with commas")
        items, how = text.split(","), "separated by commas"
    try:
        kept = (lambda item: item) if per_line == "verbatim" else str.strip
        return tuple(word_reader(kind)(kept(item)) for item in items if item.strip())
    except (ValueError, argparse.ArgumentTypeError):
        raise UserError(f"{label}: give {what} {how}, not {text!r}") from None


def _whole(value: float) -> int | float:
    """A whole number's input as an int; any other number as is, for the config to refuse with
    the field's range."""
    return int(value) if math.isfinite(value) and value.is_integer() else value


def _optional_number(label: str, kind: type, value: Any, common: dict) -> Any:
    """A text input of a number that may be left empty (None); a ``UserError`` for other text."""
    text = st.text_input(label, "" if value is None else _shown(value),
                         **common | {"help": f"{common['help']}; empty: none"})
    if not text.strip():
        return None
    try:
        return read_value(kind, text)
    except ValueError:
        raise UserError(f"{label}: give a number or leave it empty, not {text!r}") from None


def field_widget(field: dataclasses.Field, kind: Any, value: Any, key: str,
                 disabled: bool = False) -> Any:
    """One widget for one config field, starting at ``value``; returns what the person chose."""
    label, meta = field_label(field, capital=True), field.metadata
    common = {"key": key, "help": _help(field), "disabled": disabled}
    origin, widget = typing.get_origin(kind), meta.get("widget")
    if widget == "slider":
        return _slider(field, kind, value, key, disabled)
    if widget == "select_slider":
        return st.select_slider(label, meta["options"], value, **common)
    if kind is bool:
        return st.toggle(label, value, **common)
    if field_choices(field, kind) is not None:
        choices = list(field_choices(field, kind))
        if widget == "radio":
            return st.radio(label, choices, choices.index(value), horizontal=True, **common)
        return st.selectbox(label, choices, choices.index(value), **common)
    if origin is tuple and field_choices(field, typing.get_args(kind)[0]) is not None:
        choices = list(field_choices(field, typing.get_args(kind)[0]))
        return tuple(st.multiselect(label, choices, [v for v in value if v in choices],
                                    **common))
    if origin is tuple:
        return _value_list(label, typing.get_args(kind)[0], value, key, _help(field), disabled,
                           per_line="verbatim" if widget == "verbatim_lines" else
                           widget == "text_area")
    if optional_inner(kind) in (int, float):
        return _optional_number(label, optional_inner(kind), value, common)
    if kind is int:   # a float input: the browser's integer one reads "1.5" and "1e308" as 1
        return _whole(st.number_input(label, value=float(value), step=1.0, format="%.15g",
                                      **common))   # every digit of a seed or a limit
    if kind is float:
        return float(st.number_input(label, value=float(value), format="%g", **common))
    if kind is str:
        entry = st.text_area if widget == "text_area" else st.text_input
        return entry(label, value, **common)
    raise TypeError(f"no form widget for {field.name}: {kind}")


def _wide(field: dataclasses.Field, kind: Any) -> bool:
    """Whether a field's widget takes the form's whole width: a text area, or a multiselect
    (its chosen names would be cut in a column)."""
    chosen_from_list = (typing.get_origin(kind) is tuple
                        and field_choices(field, typing.get_args(kind)[0]) is not None)
    return chosen_from_list or field.metadata.get("widget") in ("text_area", "verbatim_lines")


def _widgets(spec: AttackSpec, names: Sequence[str], *, key: str, values: dict[str, Any],
             columns: int, start: Any, disabled: Sequence[str]) -> tuple[dict, list[str]]:
    """The widgets of ``names`` in ``columns`` (text areas last, full width): their values and
    the problems of those that hold none."""
    hints = typing.get_type_hints(spec.config_type)
    by_name = {f.name: f for f in dataclasses.fields(spec.config_type)}
    wide = {name: _wide(by_name[name], hints[name]) for name in names}
    shown = sorted(names, key=wide.get)   # text areas and multiselects below the columns
    chosen, problems = {}, []
    cells = st.columns(columns) if columns > 1 else None
    for i, name in enumerate(shown):
        field = by_name[name]
        initial = values.get(name, getattr(start, name) if start is not None else field.default)
        with cells[i % columns] if cells and not wide[name] else st.container():
            try:
                chosen[name] = field_widget(field, hints[name], initial, f"{key}-{name}",
                                            disabled=name in disabled)
            except UserError as err:
                problems.append(str(err))
    return chosen, problems


def config_form(spec: AttackSpec, *, key: str, fields: Sequence[str] | None = None,
                values: dict[str, Any] | None = None, columns: int = 3,
                start: Any = None, disabled: Sequence[str] = (), omit: Sequence[str] = (),
                sources: Sequence[str] = ()) -> tuple[Any | None, str | None]:
    """Widgets for ``fields`` (default: those ``param(page=...)`` puts on a page, the advanced
    ones in a folded "Advanced settings"; never a model or data source, which a page picks with
    its own widget, but the data ``sources`` a page asks for as typed paths, e.g. a list of
    corpus files), laid out in ``columns``; returns ``(config, None)``, or ``(None, message)``
    when the values do not make a config.

    Fields start at ``start``'s values (a config) if given, else at the dataclass defaults;
    ``values`` overrides both and is used as is for fields that get no widget; the widgets of
    ``disabled`` fields are shown greyed out (e.g. a setting of a switched-off option), and
    ``omit`` fields get none (a setting a page's mode fixes, given in ``values``).
    """
    values = dict(values or {})
    places = ({"main": list(fields), "advanced": []} if fields is not None
              else page_fields(spec.config_type))
    places = {place: [n for n in names if n not in omit] for place, names in places.items()}
    places["main"] += [name for name in sources if name not in places["main"]]
    options = {"key": key, "values": values, "columns": columns, "start": start,
               "disabled": disabled}
    chosen, problems = _widgets(spec, places["main"], **options)
    if places["advanced"]:
        with st.expander("Advanced settings"):
            more, trouble = _widgets(spec, places["advanced"], **options)
        chosen, problems = chosen | more, problems + trouble
    if problems:
        return None, problems[0]
    problem = data_error(spec, values | chosen)   # each data file given must read
    if problem:
        return None, problem
    try:
        return spec.config_type(**(values | chosen)), None
    except UserError as err:
        return None, str(err)


def run_button(spec: AttackSpec, config: Any | None, error: str | None, *, key: str,
               label: str = "Run", title: str | None = None) -> int | None:
    """A Run button, disabled (with ``error`` shown) while the form is invalid; a click starts
    ``spec`` on ``config`` as a background job under ``key``. Returns the new run's id."""
    if error:
        st.error(plain(error))
    confirmed = cost_gate(spec, config, key=key)   # the estimate; above the threshold, a tick
    if st.button(label, type="primary", disabled=config is None or not confirmed,
                 key=f"{key}-run"):
        return start_job(spec, config, key=key, title=title)
    return None


def job_section(spec: AttackSpec, config: Any | None, error: str | None, *, key: str,
                label: str = "Run", render_key: str | None = None) -> Any | None:
    """A spec's Run button, its job panel and its result drawn by its renderer (widget keys
    under ``render_key``, default ``key + "-"``); returns the result."""
    run_button(spec, config, error, key=key, label=label)
    result = job_panel(spec, key=key)
    if result is not None:
        render_result(spec.name, result, key=render_key or f"{key}-")
    return result
