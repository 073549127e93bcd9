"""The GPU queue decides from where a page job's models are or will be, not from its config's
``device`` field alone: a model already loaded counts where ``resolve_model`` takes it (where
it is loaded, for device "auto"), any other where the config's device resolves to."""

import dataclasses
import threading
import time

import pytest
import torch

from core.attacks.membership import mia
from core.jobs import Store, cancel, get_runner, submit
from core.jobs.runner import GPU_WAIT_MESSAGE
from core.models import load_model, unload_model
from core.specs import AttackSpec, param

WAIT_S = 20
NAMES = ("queue-target", "queue-reference")


def _until(condition, what):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.fixture
def gpu_busy(monkeypatch, tiny_lm_dir):
    """A machine that seems to have CUDA, the two models loaded (on the CPU) under ``NAMES``,
    and a GPU job holding the GPU until the test ends; yields (the models, the holder's run)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    models = [load_model(str(tiny_lm_dir), name=name, device="cpu") for name in NAMES]
    release = threading.Event()
    holder = get_runner().submit("hold", {}, lambda p, c: release.wait(WAIT_S), uses_gpu=True)
    _until(lambda: Store().get(holder).status == "running", "the GPU job to start")
    yield models, holder
    release.set()
    get_runner().wait(holder, WAIT_S)
    for name in NAMES:
        unload_model(name)


def _page_job(ran: list, spec: AttackSpec = mia.SPEC, config=None, **fields) -> int:
    """What a page submits (membership inference on the loaded models by default), its run only
    noted in ``ran``."""
    config = config or dataclasses.replace(
        mia.tiny_config(), **{"model": NAMES[0], "reference": NAMES[1], **fields})
    return submit(dataclasses.replace(spec, run=lambda c, **kwargs: ran.append(c)), config)


def _waits_for_the_gpu(*args, **fields) -> bool:
    """Whether the page job (``_page_job``'s arguments) is queued behind the GPU job (then it is
    cancelled), else it ran."""
    ran = []
    run_id = _page_job(ran, *args, **fields)
    _until(lambda: Store().get(run_id).message == GPU_WAIT_MESSAGE or ran, "the queue")
    if ran:
        return False
    assert Store().get(run_id).status == "queued" and cancel(run_id)
    assert get_runner().wait(run_id, WAIT_S).status == "cancelled" and not ran
    return True


def test_an_auto_job_whose_models_are_loaded_on_the_cpu_does_not_wait(gpu_busy):
    ran = []
    run = get_runner().wait(_page_job(ran, device="auto"), WAIT_S / 4)   # "auto" is cuda here
    assert (run.status, run.message, len(ran)) == ("done", "", 1)
    assert Store().get(gpu_busy[1]).status == "running"   # ran while the GPU was held


def test_a_model_not_loaded_yet_counts_where_the_config_loads_it(gpu_busy):
    assert _waits_for_the_gpu(device="auto", reference="not-loaded-yet")
    assert _waits_for_the_gpu(device="cuda")
    assert not _waits_for_the_gpu(device="cpu", reference="elsewhere")


@dataclasses.dataclass(frozen=True)
class NoDeviceConfig:
    """A config that names a model but no device: it is loaded on "auto"."""

    model: str = param("", path="model", help="a loaded model or a source")


NO_DEVICE = AttackSpec(name="no-device", title="no device", config_type=NoDeviceConfig, result_type=dict, run=lambda c, **k: {},
                       tiny_config=NoDeviceConfig)


def test_a_job_without_a_device_field_whose_model_is_on_the_gpu_waits(gpu_busy):
    gpu_busy[0][0].device = torch.device("cuda")   # loaded on the GPU, as far as the queue sees
    assert _waits_for_the_gpu(NO_DEVICE, NoDeviceConfig(NAMES[0]))
    ran = []
    run = get_runner().wait(_page_job(ran, NO_DEVICE, NoDeviceConfig(NAMES[1])), WAIT_S / 4)
    assert run.status == "done" and len(ran) == 1
