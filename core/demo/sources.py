"""The demo scenario as a plug-in: its ``demo:`` model and data sources and its presets.

Imported by ``core.sources`` on first use; light (no torch): it only resolves paths.
"""

from __future__ import annotations

from pathlib import Path

from core import sources
from core.demo import paths
from core.demo.presets import PRESETS

MODELS = ("demo:base", "demo:updated")
DATA = ("demo:private_train", "demo:public_train", "demo:user_samples", "demo:validation")


def _model(source: str) -> Path:
    return paths.model_dir(source.removeprefix("demo:"))


def _data(source: str) -> Path:
    return paths.data_file(source.removeprefix("demo:"))


for _name in MODELS:
    sources.register_model(_name, _model)
for _name in DATA:
    sources.register_data(_name, _data)
for _spec, _values in PRESETS.items():
    sources.register_preset(_spec, "demo", _values)
