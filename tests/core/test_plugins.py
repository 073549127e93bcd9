"""Issue #42, item 4: third-party attacks are plug-ins found by entry point
(``leakage_lab.attacks``), as lm-evaluation-harness finds its own. The architecture guide's
example package (examples/canary-count-plugin), installed by pip beside the lab with no edit of
a central file, appears in ``python -m core --help``, runs from the CLI, is priced before Run,
runs in the audit (CLI and page) with its verdict and its report section, in an audit series,
and on the plug-ins page; a plug-in that takes a registered name is refused in one line."""

import json
import shutil
import subprocess
import sys

import pytest

from core import registry
from core.__main__ import main
from core.audit import series
from pagetest import ROOT, page_app

EXAMPLE = ROOT / "examples" / "canary-count-plugin"
PLUGIN = '''from core.registry import register

def register_attacks():
    register({name!r}, "canary_count.spec", "a plug-in that takes a taken name")
'''


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A fresh registry (restored after) and a site folder on ``sys.path``."""
    monkeypatch.setattr(registry, "ENTRIES", dict(registry.ENTRIES))
    monkeypatch.setattr(registry, "ALIASES", dict(registry.ALIASES))
    monkeypatch.setattr(registry, "_loaded_plugins", None)
    monkeypatch.setattr(registry, "PLUGIN_SPECS", [])
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


def _pip_install(site, tmp_path) -> None:
    """``pip install`` of the example (a copy: the build leaves its files beside the source),
    offline, with the setuptools the lab's environment has."""
    source = shutil.copytree(EXAMPLE, tmp_path / "example")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(site), str(source)], check=True,
                   capture_output=True, timeout=120)


def test_the_guides_example_package_installed_by_pip_is_run_priced_audited_and_reported(
        site, lab_home, tmp_path, capsys):
    _pip_install(site, tmp_path)
    assert main(["--help"]) == 0
    assert "canary-count" in capsys.readouterr().out
    assert registry.load_plugins() == ["canary-count"]
    assert registry.PLUGIN_SPECS == ["canary-count"]

    assert main(["canary-count", "--tiny", "--json", "--no-record"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert alone["count"] > 0 and alone["canary_loss"] > 0

    assert main(["audit", "--tiny", "--attacks", "mia", "canary-count", "--dry-run",
                 "--json"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert any("the canary and its shuffle" in part for part in estimate["work"])

    report = tmp_path / "report.html"
    assert main(["audit", "--tiny", "--attacks", "mia", "canary-count", "--out", str(report),
                 "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["entries"]
    assert [(e["attack"], e["status"]) for e in entries] == [("mia", "done"),
                                                            ("canary-count", "done")]
    assert "copies of the canary in the training data" in entries[1]["verdict"]
    assert "<table class='canary-count'>" in report.read_text()

    tiny = series.tiny_config()
    assert main(["audit-series", "--checkpoints", *tiny.checkpoints, "--members", tiny.members,
                 "--corpus", tiny.corpus, "--attacks", "canary-count", "--device", "cpu",
                 "--json"]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert all(p["headline"]["canary-count"]["canary_loss"] > 0 for p in points)

    at = page_app("app_pages/plugins.py").run()
    assert not at.exception and at.selectbox(key="plugin-attack").value == "canary-count"
    assert at.button(key="plugin-canary-count-run") is not None


def test_the_audit_page_offers_an_installed_plugin(site, demo_home, tmp_path):
    _pip_install(site, tmp_path)
    at = page_app("app_pages/audit.py").run()
    assert not at.exception
    assert "canary-count" in at.multiselect(key="audit-attacks").options


def _fake_install(site, name: str) -> None:
    """A distribution ``toy-plugin`` as pip lays one out (its dist-info with the entry point,
    and its module), whose plug-in registers ``name``."""
    module = f"toy_plugin_{name.replace('-', '_')}"
    (site / f"{module}.py").write_text(PLUGIN.format(name=name))
    info = site / "toy_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{registry.PLUGIN_GROUP}]\n{name} = {module}:register_attacks\n")


def test_a_plugin_that_takes_a_registered_name_is_refused_in_one_line(site, capsys):
    _fake_install(site, "mia")
    assert main(["--help"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "plug-in 'mia'" in err and "toy-plugin 1.0" in err and "already registered: mia" in err
    assert registry.ENTRIES["mia"].module == "core.attacks.membership.mia"
