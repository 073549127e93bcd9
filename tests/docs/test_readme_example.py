"""The architecture guide's "how to add an attack" example is real: its spec module, listed in
the registry's table, runs through the generated CLI and is recorded."""

import re
import types

from core import registry
from core.commands import run_spec_command
from core.jobs import Store, load_result
from pagetest import ROOT


def test_the_guides_example_spec_runs_from_the_cli_and_is_recorded(monkeypatch):
    guide = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(# theirs/canary_count.py.*?)```", guide, re.S).group(1)
    code = code.split("# in the module that plugs it in")[0]   # the spec module alone
    module = types.ModuleType("canary_count")
    exec(compile(code, "guide example", "exec"), module.__dict__)
    monkeypatch.setitem(__import__("sys").modules, "canary_count", module)
    monkeypatch.setitem(registry.ENTRIES, "canary-count", registry.Entry("canary_count", "x"))
    assert len(code.splitlines()) <= 30
    result = run_spec_command(module.SPEC, ["--texts", "a secret", "two secret,secret",
                                            "--min-count", "3"], "canary-count")
    assert (result.count, result.planted) == (3, True)
    assert load_result(Store().runs("canary-count")[0]) == result
