"""The demo scenarios as a plug-in: the ``demo:``, ``realistic:``, ``technical:``, ``shift:``
(``core.demo.realistic``) and ``chat:`` (``core.demo.chat_scenario``) model and data sources,
and the presets.

Imported by ``core.sources`` on first use; light (no torch): it only resolves paths.
"""

from __future__ import annotations

from pathlib import Path

from core import sources
from core.demo import paths
from core.demo.config import USER_SPLITS
from core.demo.membership import membership_file
from core.demo.presets import PRESETS, SCENARIOS

MODELS = ("demo:base", "demo:updated")
DATA = ("demo:private_train", "demo:public_train", "demo:user_samples", "demo:validation")


def _model(source: str) -> Path:
    return paths.model_dir(source.removeprefix("demo:"))


def _data(source: str) -> Path:
    return paths.data_file(source.removeprefix("demo:"))


def _users_note(source: str) -> str:
    """How the built demo splits its users (a ``UserError`` before a build)."""
    split = paths.load_manifest().config.user_split
    return (f"Demo users, split **{split}**: {USER_SPLITS[split]}. `python -m core demo build "
            "--user-split ...` builds another split.")


def _realistic(source: str) -> Path:
    scenario, key = source.split(":", 1)
    return paths.realistic_file(key, scenario)


for _name in MODELS:
    sources.register_model(_name, _model)
for _name in DATA:
    sources.register_data(_name, _data, _users_note if _name == "demo:user_samples" else None)
sources.register_data("demo:membership", lambda source: membership_file())
for _scenario in SCENARIOS:
    sources.register_model(f"{_scenario}:updated", _realistic)
    _files = paths.CHAT_FILES if _scenario == "chat" else paths.REALISTIC_FILES
    for _key in [key for key in _files if key != "updated"]:
        sources.register_data(f"{_scenario}:{_key}", _realistic)
for _spec, _values in PRESETS.items():
    sources.register_preset(_spec, "demo", _values)
for _scenario, _presets in SCENARIOS.items():
    for _spec, _values in _presets.items():
        sources.register_preset(_spec, _scenario, _values)
