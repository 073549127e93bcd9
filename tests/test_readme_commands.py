"""Every spec command the README shows parses into a valid config (the README stays true)."""

import re
import shlex

import pytest

from core import registry
from core.commands import build_config, spec_parser
from pagetest import ROOT

COMMANDS = [line.strip() for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("    python -m core ")]


def _spec_commands():
    for line in COMMANDS:
        words = shlex.split(re.sub(r"\s\[[^\]]*\]", "", line))[3:]  # drop "[--optional]" hints
        name = registry.spec_name(words[0])
        if name is not None:
            yield pytest.param(name, [w for w in words[1:] if w != "--json"], id=words[0])


def test_the_readme_shows_commands():
    assert len(list(_spec_commands())) >= 8


@pytest.mark.parametrize("name, options", list(_spec_commands()))
def test_readme_command_parses_into_a_valid_config(name, options):
    spec = registry.get_spec(name)
    config = build_config(spec, spec_parser(spec, name).parse_args(options))
    assert isinstance(config, spec.config_type)
