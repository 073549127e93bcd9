"""Every spec command the README and the guides (docs/*.md) show parses into a valid config
(the docs stay true)."""

import re
import shlex

import pytest

from core import registry
from core.commands import build_config, spec_parser
from pagetest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMANDS = [line.strip() for page in PAGES   # a command continued with "\\" is one line
            for line in page.read_text(encoding="utf-8").replace("\\\n", " ").splitlines()
            if line.startswith("    python -m core ")]


def _spec_commands():
    for line in COMMANDS:
        words = shlex.split(re.sub(r"\s\[[^\]]*\]", "", line))[3:]  # drop "[--optional]" hints
        name = registry.spec_name(words[0])
        if name is not None:
            yield pytest.param(name, [w for w in words[1:] if w != "--json"], id=words[0])


def test_the_docs_show_commands():
    assert len(list(_spec_commands())) >= 8


@pytest.mark.parametrize("name, options", list(_spec_commands()))
def test_a_docs_command_parses_into_a_valid_config(name, options):
    spec = registry.get_spec(name)
    config = build_config(spec, spec_parser(spec, name).parse_args(options))
    assert isinstance(config, spec.config_type)


START = ("python3 -m venv .venv && .venv/bin/pip install -q -r requirements.txt && "
         ".venv/bin/streamlit run app.py")
TEST = ("python3 -m venv .venv && .venv/bin/pip install -q -r requirements-dev.txt && "
        ".venv/bin/python -m pytest")


def test_the_readme_is_short_and_gives_the_two_setup_commands_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"```bash\n(.*?)\n```", readme, re.S) == [START, TEST]
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().endswith(TEST)
    assert len(readme.splitlines()) < 200
