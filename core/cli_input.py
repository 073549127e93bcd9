"""Reading and checking what is typed on the command line, for ``core.commands`` and the plain
commands: whole and ranged numbers, parsers with one-line errors that list ``--json`` and each
default in ``--help``, and the checks of paths (shown in full: the CLI is run by the machine's
owner). Light: no torch, nothing from the packages whose commands use it.
"""

from __future__ import annotations

import argparse
import math
import os
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Callable

from core.errors import UserError
from core.specs import describe_bounds, in_bounds, optional_inner

JSON_HELP = "print the result as one JSON object (accepted anywhere on the line)"


def whole_or_number(text: str) -> int | float:
    """A whole-number field's word: the whole number it writes, exactly (186e3 is 186000;
    2.0000000000000001e3 is no whole number), else the number (1.5, 1e308, nan, inf) for the
    field's check (``core.specs.check_value``) to refuse with its range; an argparse error for a
    word that is no number."""
    try:
        exact = Decimal(text.strip())
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if exact.is_finite() and exact.adjusted() <= 30 and exact == exact.to_integral_value():
        return int(exact)
    return math.nan if exact.is_nan() else float(exact)


def whole_number(text: str) -> int:
    """A whole number, also written as 186e3 (``whole_or_number``); else an argparse error."""
    value = whole_or_number(text)
    if not isinstance(value, int):
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return value


class Number:
    """The ``type`` of a plain command's number option: a finite number (``int``: a whole one)
    within ``ge``/``gt``/``le``/``lt``. A word that is no number is a usage error; a number out
    of range a ``UserError`` naming the option and its range, as for a config field
    (``CliParser`` reads the option through ``read``). ``--help`` states the range."""

    def __init__(self, kind: type = float, **bounds: float):
        self.kind, self.bounds = kind, bounds

    def __call__(self, text: str) -> float:
        return whole_number(text) if self.kind is int else float(text)

    def read(self, action: argparse.Action, text: str) -> float:
        try:
            value = self(text)
        except (argparse.ArgumentTypeError, ValueError):
            what = (f"a whole number {describe_bounds(self.bounds)}".rstrip() if self.kind is int
                    else "a number")
            raise argparse.ArgumentError(action, f"expected {what}, got {text!r}") from None
        if not (math.isfinite(value) and in_bounds(value, self.bounds)):
            name = action.option_strings[0] if action.option_strings else action.dest
            raise UserError(f"{name} must be {describe_bounds(self.bounds)}, not {text}")
        return value


def has_default(default: Any) -> bool:
    """Whether an argparse default is worth stating (not None, an off flag or suppressed)."""
    return not (default is None or default is False or default is argparse.SUPPRESS)


class CliFormatter(argparse.HelpFormatter):
    """Help that states each option's default and, for a ``Number``, its range."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text, notes = action.help or "", []
        if has_default(action.default) and "default" not in text:
            notes.append("default: %(default)s")
        if isinstance(action.type, Number):
            notes.append(describe_bounds(action.type.bounds))
        return f"{text} ({'; '.join(notes)})" if notes else text


class CliParser(argparse.ArgumentParser):
    """argparse with one-line errors, defaults in ``--help`` and ``--json`` listed (``__main__``
    reads it anywhere on the line). The parsers of subcommands are of this class too."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", CliFormatter)
        super().__init__(*args, **kwargs)
        if self.add_help and "-" in self.prefix_chars:
            self.add_argument("--json", action="store_true", help=JSON_HELP)

    def add_argument(self, *args, **kwargs):
        if not kwargs.get("help") and has_default(kwargs.get("default")):
            kwargs["help"] = "default: %(default)s"  # argparse shows no help line otherwise
        return super().add_argument(*args, **kwargs)

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        if isinstance(action.type, (Number, Checked)):
            return action.type.read(action, arg_string)
        if action.type is Path:   # a plain option typed Path names a file to write
            check_file(arg_string, "output")
        return super()._get_value(action, arg_string)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


# ------------------------------------------------------------------ paths


def shorten(text: object, limit: int = 120) -> str:
    """``text`` as a message quotes it: a 5,000-character path cut in its middle."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit * 2 // 3]}…{text[-(limit // 3):]} ({len(text):,} characters)"


@contextmanager
def path_errors(value: object) -> Iterator[None]:
    """What the system says of a path it cannot look at (too long, a NUL byte, a loop of
    links, a read-only file system) as a one-line ``UserError``."""
    try:
        yield
    except UserError:
        raise
    except (OSError, ValueError) as err:   # ValueError: "embedded null byte"
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UserError(f"cannot use the path {shorten(repr(value))}: {reason}") from None


def check_file(value: str, kind: str) -> None:
    """A one-line ``UserError`` unless ``value`` (not empty) is a "data" file ``core.readers.data``
    reads (or a named data source), an existing "folder", or an "output" file one may write."""
    value = value.strip()
    if not value:
        return
    with path_errors(value):
        if kind == "data":
            from core.readers.data import data_file

            check_readable(data_file(value))
        elif kind == "folder":
            check_readable(Path(value).expanduser(), folder=True)
        elif kind == "output":
            check_writable(Path(value).expanduser())
        else:
            raise TypeError(f"no file check for {kind!r}")


def check_readable(path: Path, *, folder: bool = False) -> None:
    """A ``UserError`` unless ``path`` exists, is a regular file or a folder (a ``folder``
    when asked), and may be read."""
    shown = shorten(path)
    if not path.exists():
        raise UserError(f"no such {'folder' if folder else 'file or folder'}: {shown}")
    if folder and not path.is_dir():
        raise UserError(f"{shown} is not a folder")
    if not (path.is_dir() or path.is_file()):  # a device, a FIFO, a socket
        raise UserError(f"{shown} is not a regular file or a folder")
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        raise UserError(f"{shown} is not readable (permission denied)")


def check_writable(path: Path) -> None:
    """A ``UserError`` unless ``path`` is a (new or regular) file that can be opened for
    writing: tried (appending, so nothing is lost; a new file is removed again), since
    permissions alone miss a read-only file system, /proc and /sys, and root's files."""
    shown = shorten(path)
    if path.is_dir():
        raise UserError(f"{shown} is a folder: give the name of a file to write")
    if path.exists() and not path.is_file():
        raise UserError(f"{shown} is not a regular file")
    if not path.parent.is_dir():
        raise UserError(f"no such folder: {shorten(path.parent)} (create it first)")
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as err:
        raise UserError(f"cannot write {shown}: {err.strerror or err}") from None
    if not existed:
        path.unlink(missing_ok=True)


class Checked:
    """The ``type`` of an option whose word ``check`` accepts or refuses with a ``UserError``
    (one line, exit 2, like a config field's), before the command runs; ``CliParser`` reads the
    option through ``read``, since argparse would reword the error. A ``name`` ending in
    " path" marks a path check."""

    def __init__(self, check: Callable[[str], Any], name: str):
        self.check, self.__name__ = check, name

    def __call__(self, text: str) -> str:
        if not self.__name__.endswith(" path"):
            self.check(text)
        else:   # what the system cannot look at, as one line (``path_errors``)
            with path_errors(text):
                self.check(text)
        return text

    def read(self, action: argparse.Action, text: str) -> str:
        return self(text)


def file_type(kind: str) -> Checked:
    """The ``type`` of a path option, checked like a ``path`` field (``check_file``)."""
    return Checked(lambda text: check_file(text, kind), f"{kind} path")


def word_reader(kind: Any):
    """The function that reads one command-line word as ``kind`` (int, float, str, a Literal);
    an int field's reads any number (``whole_or_number``): its config names its range."""
    if kind is int:
        return whole_or_number
    if kind in (float, str):
        return kind
    if typing.get_origin(kind) is typing.Literal:
        return type(typing.get_args(kind)[0])
    raise TypeError(f"no command-line reading for {kind}")


def read_value(kind: Any, text: str) -> Any:
    """``text`` as a value of a config field of type ``kind``: true/false for a bool, a comma
    list for a tuple, "none" for an optional, else one word (``word_reader``); a ``ValueError``
    for a word that is not one."""
    text = text.strip()
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, not {text!r}")
        return text.lower() == "true"
    if typing.get_origin(kind) is tuple:
        element = typing.get_args(kind)[0]
        words = text.split(",") if element is not str or "," in text else [text]
        return tuple(read_value(element, w) for w in words if w.strip())
    inner = optional_inner(kind)
    if inner is not None:
        return None if text.lower() == "none" else read_value(inner, text)
    try:
        return word_reader(kind)(text)
    except argparse.ArgumentTypeError as err:   # whole_or_number's, for argparse
        raise ValueError(str(err)) from None
