"""Issue #42, item 4: third-party attacks are plug-ins found by entry point
(``leakage_lab.attacks``), as lm-evaluation-harness finds its own: a package installed beside
the lab, with no edit of a central file, appears in ``python -m core --help`` with its cost
before Run, runs in the audit with its verdict and its report section, in an audit series, and
on the plug-ins page; a plug-in that takes a registered name is refused in one line."""

import json

import pytest

from core import registry
from core.__main__ import main
from core.audit import series
from pagetest import page_app

PLUGIN = '''from core.registry import register

def register_attacks():
    register({name!r}, "audited_toy", "a third party's audited toy (a plug-in)",
             attr="PRICED", audited=True)
'''


def _install(site, name: str) -> None:
    """A distribution ``toy-plugin`` under ``site`` (as pip installs one: its dist-info with
    the entry point, and its module), on the path."""
    module = f"toy_plugin_{name.replace('-', '_')}"   # one module a test: none cached
    (site / f"{module}.py").write_text(PLUGIN.format(name=name))
    info = site / "toy_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{registry.PLUGIN_GROUP}]\n{name} = {module}:register_attacks\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A fresh registry (restored after) and a site folder on ``sys.path``."""
    monkeypatch.setattr(registry, "ENTRIES", dict(registry.ENTRIES))
    monkeypatch.setattr(registry, "ALIASES", dict(registry.ALIASES))
    monkeypatch.setattr(registry, "_loaded_plugins", None)
    monkeypatch.setattr(registry, "PLUGIN_SPECS", [])
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_an_installed_plugin_is_priced_audited_reported_and_on_its_page(site, lab_home, tmp_path,
                                                                       capsys):
    _install(site, "toy-priced")
    assert main(["--help"]) == 0
    assert "toy-priced" in capsys.readouterr().out
    assert registry.load_plugins() == ["toy-priced"] and registry.PLUGIN_SPECS == ["toy-priced"]

    assert main(["audit", "--tiny", "--attacks", "mia", "toy-priced", "--dry-run", "--json"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert any("the sentence" in part for part in estimate["work"])   # its cost, not "none"

    report = tmp_path / "report.html"
    assert main(["audit", "--tiny", "--attacks", "mia", "toy-priced", "--out", str(report),
                 "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["entries"]
    assert [(e["attack"], e["status"]) for e in entries] == [("mia", "done"),
                                                            ("toy-priced", "done")]
    assert entries[1]["verdict"].startswith("mean loss ")
    assert "<p>toy: " in report.read_text()

    tiny = series.tiny_config()
    assert main(["audit-series", "--checkpoints", *tiny.checkpoints, "--members", tiny.members,
                 "--attacks", "toy-priced", "--device", "cpu", "--json"]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert all(p["headline"]["toy-priced"]["mean_loss"] > 0 for p in points)

    at = page_app("app_pages/plugins.py").run()
    assert not at.exception and at.selectbox(key="plugin-attack").value == "toy-priced"
    assert at.button(key="plugin-toy-priced-run") is not None


def test_a_plugin_that_takes_a_registered_name_is_refused_in_one_line(site, capsys):
    _install(site, "mia")
    assert main(["--help"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "plug-in 'mia'" in err and "toy-plugin 1.0" in err and "already registered: mia" in err
    assert registry.ENTRIES["mia"].module == "core.attacks.membership.mia"
