"""The architecture guide's walk-through is true: the files it lists for a new attack family
are all a full citizen needs (a family built from exactly those files is found with no edit of
``core/registry.py``, runs from the CLI and is recorded, is priced before Run, audited and drawn), and the
example package it quotes holds what it quotes (``tests/core/test_plugins.py`` installs it)."""

import json
import re
import shutil
import sys

import pytest

import core.attacks
import ui.render
from core import registry
from core.__main__ import main
from core.jobs import Store, load_result
from pagetest import ROOT
from ui.render import renderer

GUIDE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
EXAMPLE = ROOT / "examples" / "canary-count-plugin"


def _walk_through_files() -> list[str]:
    block = re.search(r"<!-- walk-through files -->\n(.*?)<!-- end walk-through files -->",
                      GUIDE, re.S).group(1)
    return re.findall(r"^- `([^`]+)`$", block, re.M)


def test_the_guide_counts_the_files_it_lists():
    files = _walk_through_files()
    words = {4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight"}
    assert f"{words[len(files)]} files: its package" in GUIDE
    assert [f.split("/")[0] for f in files] == ["core"] * (len(files) - 2) + ["ui", "tests"]


@pytest.fixture
def family(tmp_path, monkeypatch):
    """The walk-through's files, written from the example package's (its modules renamed into
    ``core.attacks``), on the packages' paths; the registry read again as at start."""
    files = _walk_through_files()
    package, render_file = tmp_path / "attacks" / "canary_count", tmp_path / "render"
    package.mkdir(parents=True)
    render_file.mkdir()
    for name in (f.rsplit("/", 1)[1] for f in files if f.startswith("core/")):
        text = ("" if name == "__init__.py" else
                (EXAMPLE / "canary_count" / name).read_text(encoding="utf-8"))
        (package / name).write_text(text.replace("canary_count.", "core.attacks.canary_count."))
    (package / "__init__.py").write_text(
        '"""Canary count, as a family of the lab."""\n\nATTACKS = {"canary-count": dict(\n'
        '    module="core.attacks.canary_count.spec", help="copies of a planted string",\n'
        '    audited=True)}\n')
    shutil.copy(EXAMPLE / "canary_count" / "render.py", render_file / "canary_count.py")
    monkeypatch.setattr(core.attacks, "__path__", [*core.attacks.__path__,
                                                   str(tmp_path / "attacks")])
    monkeypatch.setattr(ui.render, "__path__", [*ui.render.__path__, str(render_file)])
    monkeypatch.setattr(registry, "ENTRIES", registry.family_entries() | registry.ENTRIES)
    monkeypatch.setattr(registry, "ALIASES", dict(registry.ALIASES))
    yield files
    for name in [m for m in sys.modules if m.startswith(("core.attacks.canary_count",
                                                         "ui.render.canary_count"))]:
        del sys.modules[name]


def test_a_family_of_the_listed_files_is_a_full_citizen(family, lab_home, capsys):
    assert "canary-count" in registry.family_entries()
    assert main(["--help"]) == 0 and "canary-count" in capsys.readouterr().out
    assert main(["canary-count", "--tiny", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] > 0
    [run] = Store().runs("canary-count")   # recorded, and read back typed
    assert load_result(run).count > 0 and type(load_result(run)).__name__ == "CanaryCountResult"
    assert main(["audit", "--tiny", "--attacks", "mia", "canary-count", "--dry-run",
                 "--json"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert any("the canary and its shuffle" in part for part in estimate["work"])
    assert renderer("canary-count").__module__ == "ui.render.canary_count"


def test_the_example_package_holds_what_the_guide_quotes():
    toml, plugin = re.findall(r"```(?:toml|python)\n(.*?)```", GUIDE.split(
        "**A third party's attack**")[1], re.S)[:2]
    assert toml in (EXAMPLE / "pyproject.toml").read_text(encoding="utf-8")
    assert plugin in (EXAMPLE / "canary_count" / "plugin.py").read_text(encoding="utf-8")
