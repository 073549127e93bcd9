"""``python -m bench.gpu``: its CPU mode runs every section's checks (so the GPU suite cannot
rot), its checks catch wrong numbers, and it picks CUDA whenever there is one; the prepared
device call (bench/gpu_session.sh) runs commands that parse."""

import importlib
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
import torch

from bench import gpu
from bench.gpu_common import TOLERANCES, Row, bf16_peak, compare_logprobs, order_agrees


def test_the_cpu_mode_runs_every_section_and_its_checks_pass(tmp_path):
    """Every section but Ray's (tests/core/test_scaleout.py runs it on the suite's Ray)."""
    out = tmp_path / "gpu.json"
    sections = [name for name in gpu.SECTIONS if name != "ray"]
    assert gpu.main(["--cpu", "--json", str(out), "--only", *sections]) == 0
    report = json.loads(out.read_text())
    rows = report["rows"]
    assert [r["name"].split()[0] for r in rows] == ["scoring", "generation", "user", "differential",
                                                     "n-gram", "DP", "DP", "decode", "scoring",
                                                     "generation", "audit"]
    assert rows[6]["name"].endswith("bf16-mixed")
    for number, row in enumerate(rows):
        assert row["ok"] and not row["error"], row
        assert row["device"] == "cpu" and row["figure"] > 0
        # every figure has its baseline but the large models' generation and audit (no loop to beat)
        assert (row["baseline"] is None) == (number in (9, 10)), row
        assert row["checks"] and all(c["passed"] for c in row["checks"])
        assert row["met"] is None and row["bar"] == ""  # the bars hold on a GPU only
    assert report["dtype"] == "float32" and report["peak_flops"] is None


def test_a_section_that_raises_is_a_failed_row_and_the_exit_status_says_so(tmp_path, monkeypatch):
    def broken(bench):
        raise RuntimeError("no kernel image is available")

    monkeypatch.setitem(gpu.SECTIONS, "ngram", broken)
    out = tmp_path / "gpu.json"
    assert gpu.main(["--cpu", "--only", "ngram", "--json", str(out)]) == 1
    [row] = json.loads(out.read_text())["rows"]
    assert not row["ok"] and "no kernel image" in row["error"]


def test_the_checks_catch_shifted_log_probs_and_swapped_texts():
    rng = np.random.default_rng(0)
    reference = [rng.normal(-11, 1, 64) for _ in range(4)]
    row = Row("t", "cpu", 1.0, "")
    compare_logprobs(row, "same", reference, reference, TOLERANCES[torch.bfloat16], rank=True)
    assert row.ok
    shifted = [np.roll(r, 1) for r in reference]  # a target off by one position
    compare_logprobs(row, "shifted", shifted, reference, TOLERANCES[torch.bfloat16])
    assert not row.ok and not row.checks[-2]["passed"]
    assert order_agrees(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0]), 0.5) == (True, 3)
    assert order_agrees(np.array([1.0, 3.0, 2.0]), np.array([1.0, 2.0, 3.0]), 0.5) == (False, 3)
    assert order_agrees(np.array([1.0, 3.0, 2.0]), np.array([1.0, 2.0, 3.0]), 1.5) == (True, 1)


def test_cuda_is_chosen_when_there_is_one_unless_cpu_is_asked(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert gpu.choose_device(cpu=False) == torch.device("cuda")
    assert gpu.choose_device(cpu=True) == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu.choose_device(cpu=False) == torch.device("cpu")


@pytest.mark.parametrize("name, tflops", [("NVIDIA H100 80GB HBM3", 989), ("NVIDIA H100 PCIe", 756),
                                          ("NVIDIA H100 NVL", 835), ("NVIDIA H200", 989),
                                          ("NVIDIA A100-SXM4-80GB", 312),
                                          ("NVIDIA GeForce RTX 4090", None)])
def test_the_assumed_bf16_peak_comes_from_the_device_name(name, tflops):
    assert bf16_peak(name) == (tflops and tflops * 1e12)


def test_the_gpu_sessions_one_call_runs_commands_that_parse_within_a_device_calls_limit():
    """bench/gpu_session.sh: each step a bench module whose parser takes its arguments, and the
    steps cut to a deadline that leaves the install and the start half a minute of the 600 s a
    device command may run."""
    script = (Path(__file__).parents[2] / "bench" / "gpu_session.sh").read_text()
    steps = re.findall(r"^step (\S+) (\d+) python3 -m (bench\.\w+)(.*)$",
                       script.replace("\\\n", " "), re.MULTILINE)
    assert [name for name, *_ in steps] == ["large", "ray-dp", "probe-1024", "profile",
                                            "scoring-decode"]
    assert int(re.search(r"DEADLINE=\$\{DEADLINE:-(\d+)\}", script)[1]) <= 570
    for _, _, module, args in steps:
        words = shlex.split(args.replace('"$OUT', '"/tmp/out'))
        assert importlib.import_module(module).parse(words) is not None, module
