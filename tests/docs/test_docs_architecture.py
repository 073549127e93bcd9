"""The architecture guide's third-party attack is real: registered with ``register`` (no edit of
``core/registry.py``), it runs from the generated CLI, is recorded, and draws with its renderer."""

import importlib.machinery
import re
import sys
import types

from core import registry
from core.commands import run_spec_command
from core.jobs import Store, load_result
from pagetest import ROOT
from ui.render import renderer


def test_the_guides_third_party_attack_registers_runs_and_renders(monkeypatch):
    guide = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(# theirs/canary_count.py.*?)```", guide, re.S).group(1)
    spec_code, plug_in = code.split("# in the module that plugs it in")
    theirs = types.ModuleType("theirs")
    module = types.ModuleType("theirs.canary_count")
    drawn = []
    render = types.ModuleType("theirs.render_canary_count")
    render.render = lambda result, *, key: drawn.append((result, key))
    render.__spec__ = importlib.machinery.ModuleSpec(render.__name__, None)
    exec(compile(spec_code, "guide example", "exec"), module.__dict__)
    for name, value in (("theirs", theirs), ("theirs.canary_count", module),
                        ("theirs.render_canary_count", render)):
        monkeypatch.setitem(sys.modules, name, value)
    monkeypatch.setattr(registry, "ENTRIES", dict(registry.ENTRIES))
    monkeypatch.setattr(registry, "ALIASES", dict(registry.ALIASES))
    plugin = {}
    exec(compile("from core.registry import register\n" + plug_in.split("\n", 1)[1],
                 "guide plug-in", "exec"), plugin)
    plugin["register_attacks"]()   # what the entry point names (core.registry.load_plugins)
    assert registry.get_spec("canary-count") is module.SPEC
    result = run_spec_command(module.SPEC, ["--texts", "a secret", "two secret,secret",
                                            "--min-count", "3"], "canary-count")
    assert (result.count, result.planted) == (3, True)
    assert load_result(Store().runs("canary-count")[0]) == result
    renderer("canary-count")(result, key="cc-")
    assert drawn == [(result, "cc-")]
