"""Demo builds take turns under a lock and swap a complete folder in: two concurrent builds (one
in another process) leave a complete demo, and a build killed mid-way leaves the previous one."""

import dataclasses
import textwrap
import time

from core.demo import scenario
from pagetest import ROOT
from warm import Child

WAIT_S = 60
QUICK = dataclasses.replace(scenario.tiny_config(), base_steps=2, update_steps=2)  # 2 s
# A forced build of QUICK, with UPDATE_STEPS update steps, in a process of its own.
BUILD = textwrap.dedent("""
    import dataclasses, sys
    from core.demo import scenario
    from core.runtime import print_progress
    steps = int(sys.argv[2])
    config = dataclasses.replace(scenario.tiny_config(), base_steps=2, update_steps=steps)
    scenario.build(config, root=sys.argv[1], force=True, progress=print_progress)
""")


def _start_build(root, update_steps=QUICK.update_steps):
    """The build in another (warm) process, and the list its progress lines are read into."""
    child = Child(BUILD, root, update_steps, folder=ROOT)
    return child, child.lines


def _until_line(lines, text):
    deadline = time.monotonic() + WAIT_S
    while not any(text in line for line in lines):
        assert time.monotonic() < deadline, f"no {text!r} in {''.join(lines)}"
        time.sleep(0.05)


def _files(root):
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_second_build_waits_for_the_first_then_rebuilds_and_the_demo_is_complete(tmp_path):
    root = tmp_path / "demo"
    other = []

    def progress(fraction, message="", partial=None):
        if not other and message.startswith("demo:base: step"):  # mid-build, holding the lock
            other.extend(_start_build(root))
            _until_line(other[1], "waiting for another demo build")

    try:
        scenario.build(QUICK, root=root, force=True, progress=progress)
        first_build = root.stat().st_ino
        child, lines = other
        assert child.wait(WAIT_S) == 0, "".join(lines)
    finally:
        if other:
            other[0].kill()
    _until_line(lines, "demo built")
    assert root.stat().st_ino != first_build  # --force: the second build replaced the first
    manifest = scenario.load_manifest(root)
    assert manifest.config_hash == QUICK.config_hash()
    for name in scenario.MODEL_NAMES:
        assert (scenario.model_dir(name, root) / "config.json").exists()
    assert all((root / path).stat().st_size > 0 for path in manifest.files.values())
    assert sorted(p.name for p in tmp_path.glob("*demo*")) == [".demo.lock", "demo"]  # no leftovers


def test_a_build_killed_mid_way_leaves_the_previous_demo_intact(tmp_path):
    root = tmp_path / "demo"
    scenario.build(QUICK, root=root)
    before = _files(root)
    child, lines = _start_build(root, update_steps=10_000)
    try:
        _until_line(lines, "demo:updated: step")  # demo:base is written to its staging folder
    finally:
        child.kill()
    [staged] = tmp_path.glob("demo.building-*")
    assert (staged / "base" / "model.safetensors").exists() and not (staged / "updated").exists()
    assert _files(root) == before
    messages = []
    scenario.build(QUICK, root=root, progress=lambda f, m="", p=None: messages.append(m))
    assert messages == ["demo already built"]  # the dead build's lock is free: no waiting
    assert not staged.exists() and _files(root) == before  # its leftovers are cleared
