"""One spec run on a plug-in's preset, the unit every figures section measures with."""

from __future__ import annotations


def run_preset(spec_name: str, preset: str, **overrides):
    """A spec run (not recorded) on a plug-in's preset with ``overrides``."""
    from core import sources
    from core.jobs import run_now
    from core.registry import get_spec
    from core.runtime import no_progress

    spec = get_spec(spec_name)
    config = spec.config_type(**sources.preset(spec_name, preset) | overrides)
    return run_now(spec, config, record=False, progress=no_progress)
