"""The README's "adding an attack" example is real: it runs through the generated CLI."""

import re
import types

from core import registry
from core.commands import run_spec_command
from core.jobs import Store, load_result
from pagetest import ROOT


def test_the_readme_example_spec_runs_from_the_cli_and_is_recorded(monkeypatch):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(# core/attacks/canary_count.py.*?)```", readme, re.S).group(1)
    module = types.ModuleType("canary_count")
    exec(compile(code, "README example", "exec"), module.__dict__)
    monkeypatch.setitem(__import__("sys").modules, "canary_count", module)
    monkeypatch.setitem(registry.ENTRIES, "canary-count", registry.Entry("canary_count", "x"))
    assert len(code.splitlines()) <= 30
    result = run_spec_command(module.SPEC, ["--texts", "a secret", "two secret,secret",
                                            "--min-count", "3"], "canary-count")
    assert (result.count, result.planted) == (3, True)
    assert load_result(Store().runs("canary-count")[0]) == result
