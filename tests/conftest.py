"""Shared fixtures: every test gets its own Leakage Lab home directory."""

import pytest


@pytest.fixture(autouse=True)
def lab_home(tmp_path, monkeypatch):
    """Point ``core.paths.home()`` at a fresh temporary folder for each test."""
    home = tmp_path / "lab-home"
    monkeypatch.setenv("LEAKAGE_LAB_HOME", str(home))
    return home
