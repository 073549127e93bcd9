"""The checkpoints of one training run, each with its training step, for an audit series.

A series is given as model sources (folders, files, ``ADAPTER@BASE``, loaded models), or as one
folder holding checkpoint subfolders: ``checkpoint-N`` as the Hugging Face Trainer writes them,
``step-N``, or any subfolder that is a model (it holds a ``config.json`` or an
``adapter_config.json``); ``FOLDER@BASE`` puts every adapter in it on ``BASE``.

A checkpoint's training step is the number its name ends in (``checkpoint-500``,
``step-0000500``, ``epoch_3``; not the 2 of ``gpt2``), else the ``global_step`` of the
``trainer_state.json`` in its folder (read as JSON, nothing unpickled). When a checkpoint has
neither, every checkpoint is numbered by its place in the list (1, 2, ...), so that one axis never
mixes steps and places.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePath
from typing import NamedTuple, Sequence

from core import paths, sources
from core.errors import UserError
from core.models.adapters import ADAPTER_CONFIG
from core.models.loaders import split_base
from core.models.loaded import loaded_models

STEP_IN_NAME = re.compile(r"(?:^|[^0-9a-z]|step|checkpoint|ckpt|iter)(\d+)$", re.IGNORECASE)
FILE_SUFFIXES = (".zip", ".gguf")            # a checkpoint file's step is in its stem
MODEL_FILES = ("config.json", ADAPTER_CONFIG)  # what makes a subfolder a checkpoint
TRAINER_STATE = "trainer_state.json"
TRAINER_STATE_BYTES = 32 * 2**20             # a longer log history is not read


class Checkpoint(NamedTuple):
    step: int
    source: str


def step_from_name(name: str) -> int | None:
    """The number the last part of ``name`` ends in, after a separator or a word such as
    ``step`` (``checkpoint-500`` -> 500, ``step-0000500`` -> 500, ``gpt2`` -> None)."""
    last = PurePath(name.strip().rstrip("/\\") or ".")
    stem = last.stem if last.suffix.lower() in FILE_SUFFIXES else last.name
    match = STEP_IN_NAME.search(stem)
    return int(match[1]) if match else None


def step_from_trainer_state(folder: Path) -> int | None:
    """``global_step`` of ``folder/trainer_state.json`` (the HF Trainer's), if readable."""
    path = folder / TRAINER_STATE
    if not paths.may_read(path) or not path.is_file() \
            or path.stat().st_size > TRAINER_STATE_BYTES:
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    step = state.get("global_step") if isinstance(state, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None


def _local(source: str) -> tuple[str, Path | None]:
    """The name ``source`` gives its model (an adapter's, for ``ADAPTER@BASE``) and the local
    path it names, if any: a loaded model's source, a named source's folder, else a path."""
    name = split_base(source)[0]
    loaded = {lm.name: lm.source for lm in loaded_models()}
    target = split_base(loaded[name])[0] if name in loaded else name
    try:
        named = sources.model_path(target)
    except UserError:   # a named source not built (yet)
        return name, None
    return name, named or Path(target).expanduser()


def step_of(source: str) -> int | None:
    """The training step of checkpoint ``source``: from its name, else its path's name, else
    its ``trainer_state.json``; None when none tells."""
    name, path = _local(source)
    for text in (name, path.name if path is not None else ""):
        if (step := step_from_name(text)) is not None:
            return step
    readable = path is not None and paths.may_read(path) and path.is_dir()
    return step_from_trainer_state(path) if readable else None


def in_step_order(checkpoints: Sequence[str]) -> tuple[list[Checkpoint], bool]:
    """The checkpoints in step order, and whether their steps are training steps (False: some
    checkpoint tells none, so each is numbered by its place in the list). Two checkpoints of
    one step are refused."""
    steps = [step_of(source) for source in checkpoints]
    if None in steps:
        return [Checkpoint(place, source) for place, source in enumerate(checkpoints, 1)], False
    first: dict[int, str] = {}
    for step, source in zip(steps, checkpoints):
        if step in first:
            raise UserError(f"{paths.shown(first[step])} and {paths.shown(source)} are both "
                            f"step {step}: a series takes one checkpoint per training step")
        first[step] = source
    return sorted(Checkpoint(step, source) for step, source in first.items()), True


def is_model_folder(path: Path) -> bool:
    return any((path / name).is_file() for name in MODEL_FILES)


def expand(checkpoints: tuple[str, ...]) -> tuple[str, ...]:
    """``checkpoints`` as given, unless it is one folder that is no model itself: then its
    checkpoint subfolders, in step order (``FOLDER@BASE``: each as ``SUBFOLDER@BASE``). Work a
    page started lists only the lab's folders (``core.paths``)."""
    if len(checkpoints) != 1:
        return checkpoints
    text, base = split_base(checkpoints[0])
    if sources.is_named_model(text) or text in {lm.name for lm in loaded_models()}:
        return checkpoints
    folder = Path(text).expanduser()
    paths.check_readable(folder)
    if not folder.is_dir() or is_model_folder(folder):
        return checkpoints
    found = [f"{sub}@{base}" if base else str(sub)
             for sub in sorted(folder.iterdir()) if sub.is_dir() and is_model_folder(sub)]
    if len(found) < 2:
        raise UserError(f"{paths.shown(folder)} holds {len(found)} checkpoint subfolder"
                        f"{'s' if len(found) != 1 else ''} (a folder with a config.json or an "
                        f"{ADAPTER_CONFIG}): a series needs at least 2")
    return tuple(checkpoint.source for checkpoint in in_step_order(found)[0])
