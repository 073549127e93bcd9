"""Compiled kernels (``core.scoring.fused``): when they are used, that
a compiler failure falls back to the eager function, and that the scoring engine through a
compiled body (traced by Dynamo; the CPU has no Triton, so the eager backend stands in for
Inductor) gives the very scores of the eager engine, whatever its batch shapes."""

import functools

import numpy as np
import pytest
import torch

from core.errors import UserError
from core.models import resolve_model
from core.scoring import clear_cache, fused, score_texts
from core.scoring import engine


@pytest.mark.parametrize("mode, device, tokens, wanted", [
    ("auto", "cuda", 10**8, True), ("auto", "cuda", 10**6, False), ("1", "cuda", 1000, True),
    ("0", "cuda", 10**8, False), ("1", "cpu", 10**8, False)])
def test_compiling_is_for_large_jobs_on_a_gpu_unless_switched(monkeypatch, mode, device, tokens, wanted):
    monkeypatch.setenv(fused.ENV, mode)
    monkeypatch.setattr(fused, "has_triton", lambda: True)
    assert fused.compile_wanted(torch.device(device), tokens) is wanted
    monkeypatch.setattr(fused, "has_triton", lambda: False)
    assert not fused.compile_wanted(torch.device(device), tokens)


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_a_setting_it_does_not_know_is_a_one_line_error_naming_the_variable(monkeypatch, device):
    monkeypatch.setenv(fused.ENV, "sometimes")
    with pytest.raises(UserError, match=r"\$LEAKAGE_LAB_COMPILE must be auto, 1 or 0, not "
                                        r"'sometimes'"):
        fused.compile_wanted(torch.device(device), 10**8)
    monkeypatch.setenv(fused.ENV, " OFF ")
    assert not fused.compile_wanted(torch.device(device), 10**8)


def test_a_compiler_failure_runs_the_function_eagerly_from_then_on(monkeypatch):
    calls = []

    def broken_compiler(function, **options):
        def run(*args):
            calls.append(args)
            raise RuntimeError("Cannot find a working triton installation")
        return run

    monkeypatch.setattr(torch, "compile", broken_compiler)
    double = fused.Compiled(lambda x: 2 * x, what="doubling")
    assert double(3) == 6 and double(4) == 8
    assert len(calls) == 1 and double.compiled is None


def test_out_of_memory_in_a_compiled_function_is_not_a_compiler_failure(monkeypatch):
    def oom(*args):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(torch, "compile", lambda function, **options: oom)
    function = fused.Compiled(lambda x: x)
    with pytest.raises(torch.OutOfMemoryError):
        function(1)
    assert function.compiled is oom


TEXTS = ["the cat sat on the mat " * k for k in range(1, 6)] + ["a"]


@pytest.fixture
def uncompiled_afterwards():
    """The models compiled in a test run eagerly again after it (the loaded models are shared)."""
    yield
    fused._BODIES.clear()
    fused.compiled_readouts.cache_clear()


def test_the_engine_through_a_compiled_body_gives_the_eager_scores(tiny_lm_dir, monkeypatch,
                                                                    uncompiled_afterwards):
    lm = resolve_model(str(tiny_lm_dir), device="cpu")
    eager = score_texts(lm, TEXTS, batch_size=2)
    clear_cache()
    monkeypatch.setattr(fused, "compile_wanted", lambda device, tokens: True)
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    shapes = []
    real = engine._forward
    monkeypatch.setattr(engine, "_forward", lambda model, ids, mask: shapes.append(tuple(ids.shape))
                        or real(model, ids, mask))
    scores = score_texts(lm, TEXTS, batch_size=2)
    body = fused._BODIES[lm.model]
    assert body.compiled is not None and len(set(shapes)) > 2
    for ours, theirs in zip(scores, eager):
        np.testing.assert_allclose(ours.logprobs, theirs.logprobs, rtol=1e-5, atol=1e-5)
