"""The user-inference what-ifs honour ``--device``: a run asked to stay on the CPU loads the
models its attacks compare there, even on a machine that seems to have a GPU."""

import json

import torch

from core.__main__ import main
from core.demo import scenario, whatif
from core.jobs import Store
from core.models import loaded_models
from demo_fixtures import install_demo
from modelfiles import clean_models  # noqa: F401


def test_a_what_if_on_the_cpu_attacks_on_the_cpu(tmp_path, lab_home, monkeypatch, capsys):
    root = tmp_path / "micro-demo"
    scenario.build(whatif.micro_demo_config(), root=root)
    install_demo(root, lab_home)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)   # "auto" would pick cuda
    assert main(["user-inference-mitigate", "--no-dedup", "--per-user-limit", "1",
                 "--bootstrap", "0", "--device", "cpu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["variant"] == "≤ 1 samples per user"
    (run,) = Store().runs("user-inference-mitigate")
    assert run.status == "done" and run.params["device"] == "cpu"
    assert loaded_models() and {lm.device.type for lm in loaded_models()} == {"cpu"}
