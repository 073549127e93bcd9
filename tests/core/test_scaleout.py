"""Scale-out on Ray: the engine's scoring sharded over a local Ray with 2 workers gives what the
in-process engine gives, resumes from its finished shards, survives a killed worker, cancels,
and leaves Ray unimported when off."""

import os
import threading
import time

import numpy as np
import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.xdist_group("ray")   # one worker starts Ray; scheduled first (conftest)

from core import scaleout  # noqa: E402
from core.attacks.extraction import spec as extraction  # noqa: E402
from core.attacks.user_inference import spec as user_inference
from core.demo import scenario  # noqa: E402
from core.errors import UserError  # noqa: E402
from core.models import load_model  # noqa: E402
from core.runtime import Cancelled  # noqa: E402
from core.scoring import Moment, Sampler, clear_cache, score_texts, score_under_samplers  # noqa: E402
from warm import Child  # noqa: E402

TWO_WORKERS = scaleout.ScaleOut("auto", workers=2, shard_tokens=200)


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray (2 CPUs) for the module, shut down after it."""
    import ray

    from core.scaleout import ray_scoring

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env=ray_scoring._runtime_env(False))
    yield ray
    ray_scoring._POOLS.clear()
    ray.shutdown()


@pytest.fixture
def corpus(tiny_demo):
    return scenario.data_file("private_train", tiny_demo).read_text(encoding="utf-8").splitlines()[:80]


def _values(scored):
    return [[s.logprobs for s in per] for per in scored]


def test_sharded_scores_equal_the_in_process_ones(ray_local, tiny_demo, corpus):
    lm = load_model(str(scenario.model_dir("updated", tiny_demo)), device="cpu", dtype="float32")
    readouts = [None, Sampler(top_k=5), Moment("mean")]
    ids = lm.tokenizer(corpus, add_special_tokens=False)["input_ids"]
    here = _values(score_under_samplers(lm, ids, readouts))
    clear_cache()   # else the second call is served from the engine's cache
    messages = []
    with scaleout.using(TWO_WORKERS):
        there = _values(score_under_samplers(lm, ids, readouts, progress=lambda f, m: messages.append(m)))
    assert any("shards on Ray" in m for m in messages)
    for a, b in zip(here, there):
        for x, y in zip(a, b):
            # float32; a shard pads its batches differently, so sums round a few ulps apart
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-5)


def test_attacks_give_the_same_results_on_ray(ray_local, tiny_demo, lab_home):
    models = dict(model=str(scenario.model_dir("updated", tiny_demo)),
                  reference=str(scenario.model_dir("base", tiny_demo)), device="cpu")
    users = user_inference.UserInferenceConfig(
        **models, data=str(scenario.data_file("user_samples", tiny_demo)), bootstrap=50,
        knowledge_draws=3)
    pulls = extraction.ExtractionConfig(
        **models, corpus=str(scenario.data_file("private_train", tiny_demo)), n_samples=16,
        tokens=24, strategies=("top-n",), min_span_tokens=4, seed=0)
    for spec, config in ((user_inference.SPEC, users), (extraction.SPEC, pulls)):
        clear_cache()
        here = spec.run(config)
        clear_cache()
        with scaleout.using(TWO_WORKERS):
            there = spec.run(config)
        assert spec.headline(here).keys() == spec.headline(there).keys()
        if spec is user_inference.SPEC:
            assert [r.t_hat for r in here.rows] == pytest.approx([r.t_hat for r in there.rows], abs=1e-5)
            assert [r.user_id for r in here.rows] == [r.user_id for r in there.rows]
            assert here.auroc == there.auroc
        else:
            assert [c.text for c in here.candidates] == [c.text for c in there.candidates]
    assert not list((lab_home / "shards").glob("*.npz"))   # merged, then removed


def test_an_interrupted_run_resumes_from_its_shards_and_a_killed_worker_restarts(ray_local, tiny_demo, corpus, lab_home):
    lm = load_model(str(scenario.model_dir("base", tiny_demo)), device="cpu", dtype="float32")
    cancel = threading.Event()

    def stop_after_two(fraction, message=""):
        if message.startswith("scored 2 of"):
            cancel.set()

    with scaleout.using(TWO_WORKERS), pytest.raises(Cancelled):
        score_texts(lm, corpus, progress=stop_after_two, cancel=cancel)
    kept = list((lab_home / "shards").glob("*.npz"))
    assert len(kept) >= 2
    messages = []
    with scaleout.using(TWO_WORKERS):   # the cancel killed the pool: a fresh one starts
        with scaleout.remote_scorer(lm).leased() as pool:
            ray_local.kill(pool[0], no_restart=False)   # a worker dies: Ray restarts it
            resumed = score_texts(lm, corpus, progress=lambda f, m: messages.append(m))
    assert any(f"{len(kept)} of" in m and "from an earlier run" in m for m in messages)
    clear_cache()
    expected = score_texts(lm, corpus)
    for a, b in zip(resumed, expected):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=2e-6)


def test_a_model_held_only_in_memory_is_scored_in_process(tiny_demo):
    lm = load_model(str(scenario.model_dir("base", tiny_demo)), device="cpu")
    lm.identity = ""
    with scaleout.using(TWO_WORKERS):
        assert scaleout.remote_scorer(lm) is None


def test_settings_are_checked_and_ray_stays_unimported_without_them():
    with pytest.raises(UserError, match="from 0"):
        scaleout.ScaleOut("auto", workers=-1)
    with pytest.raises(UserError, match="address"):
        scaleout.ScaleOut(" ")
    code = ("import sys; from core.models import load_model; from core.scoring import score_texts; "
            "from core.models.tiny import new_gpt2, train_tokenizer; "
            "t = train_tokenizer(['a b c d'] * 8, vocab_size=60); "
            "from core.models.loaded import LoadedModel; "
            "lm = LoadedModel.in_memory('m', new_gpt2(t, n_layer=1, n_head=1, n_embd=8, n_positions=16), t); "
            "score_texts(lm, ['a b']); print('ray' in sys.modules)")
    child = Child(code)   # a new process whose preload (torch, the scoring modules) has no Ray
    assert child.wait(120) == 0, child.output
    assert child.lines[-1].strip() == "False"


def _where_on_the_runs_page(run_ids):
    """The Runs page's "where" column for ``run_ids``, and the caption of the run opened."""
    from pagetest import page_app

    at = page_app("app_pages/runs.py").run()
    assert not at.exception
    table = at.dataframe[0].value
    where = dict(zip(table["id"], table["where"]))
    at.selectbox(key="run").set_value(run_ids[0]).run()
    return [where[i] for i in run_ids], " ".join(c.value for c in at.caption)


def test_workers_import_this_checkout_first_and_keep_the_drivers_python_path(monkeypatch):
    """Packages installed with ``pip --target`` on the driver's PYTHONPATH (how a GPU image
    without Ray gets it) stay importable by the local workers; a remote cluster gets the
    uploaded checkout and its own environment."""
    from core.scaleout import ray_scoring

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/opt/site", ""]))
    local = ray_scoring._runtime_env(False)["env_vars"]["PYTHONPATH"]
    assert local.split(os.pathsep) == [str(ray_scoring.ROOT), "/opt/site"]
    assert "PYTHONPATH" not in ray_scoring._runtime_env(True)["env_vars"]


def test_the_gpu_suites_ray_section_checks_scores_on_the_pool_against_in_process(ray_local, tmp_path):
    """``bench.gpu``'s Ray section (user inference on a pool of one worker per GPU, here per
    CPU) on the suite's Ray, which it leaves running."""
    import json

    from bench import gpu

    out = tmp_path / "ray.json"
    assert gpu.main(["--cpu", "--only", "ray", "--json", str(out)]) == 0
    [row] = json.loads(out.read_text())["rows"]
    assert row["extra"]["workers"] == 2 and row["extra"]["shards"] >= 1
    assert [c["check"] for c in row["checks"] if c["passed"]] == [
        "scored on the Ray pool", "T̂ equals the in-process run's", "T̂ equals float32 on the CPU"]
    assert ray_local.is_initialized()


def test_a_recorded_cli_run_on_ray_scores_there_and_says_so(ray_local, tiny_demo, capsys):
    """The CLI's default (a recorded run) with ``--ray auto``: scored on the 2 workers, results
    as in process, and the run's record and the Runs page say where it ran."""
    import json

    from core.__main__ import main
    from core.jobs import Store

    args = ["user-inference", "--model", str(scenario.model_dir("updated", tiny_demo)),
            "--reference", str(scenario.model_dir("base", tiny_demo)), "--data",
            str(scenario.data_file("user_samples", tiny_demo)), "--bootstrap", "50", "--draws", "3",
            "--json"]
    assert main(args + ["--ray", "auto", "--ray-workers", "2"]) == 0
    on_ray, ray_run = json.loads(capsys.readouterr().out), Store().runs()[0]
    clear_cache()
    assert main(args) == 0
    here, local_run = json.loads(capsys.readouterr().out), Store().runs()[0]
    assert on_ray["auroc"] == here["auroc"]
    t_hats = [[r["t_hat"] for r in result["rows"]] for result in (on_ray, here)]
    assert t_hats[0] == pytest.approx(t_hats[1], abs=1e-5)
    assert ray_run.placement["workers"] == 2 and ray_run.placement["shards"] >= 2
    assert local_run.placement is None
    where, caption = _where_on_the_runs_page([ray_run.id, local_run.id])
    assert where == [f"Ray: 2 workers, {ray_run.placement['shards']} shards", "in process"]
    assert "Ran on Ray (auto): 2 workers" in caption
    clear_cache()   # else nothing is left to score, and no worker is asked for
    assert main(args + ["--ray", "auto", "--ray-workers", "3"]) == 2
    assert "ask for 1 to 2 workers" in capsys.readouterr().err


def test_an_audit_on_ray_scores_its_attacks_there_and_says_so(ray_local, capsys):
    """``audit --ray auto``: its attacks (runs of their own) score on Ray, give what they give in
    process, and each, with the audit, is shown as run on Ray."""
    import json

    from core.__main__ import main
    from core.jobs import Store

    assert main(["audit", "--tiny", "--json"]) == 0
    here = json.loads(capsys.readouterr().out)
    clear_cache()
    assert main(["audit", "--tiny", "--ray", "auto", "--ray-workers", "2", "--json"]) == 0
    on_ray = json.loads(capsys.readouterr().out)
    assert [e["headline"] for e in on_ray["entries"]] == [e["headline"] for e in here["entries"]]
    audit_run = Store().runs("audit")[0]
    part = Store().get(on_ray["entries"][0]["run_id"])
    assert part.parent == audit_run.id and part.placement["shards"] >= 1
    assert audit_run.placement == part.placement   # the audit's scoring is its attacks'
    assert Store().get(here["entries"][0]["run_id"]).placement is None
    where, caption = _where_on_the_runs_page([part.id, audit_run.id, here["entries"][0]["run_id"]])
    shown = scaleout.describe_placement(part.placement)
    assert shown.startswith("Ray: 2 workers, ") and where == [shown, shown, "in process"] and "Ran on Ray (auto)" in caption


def test_the_sidebar_offers_ray_only_when_the_operator_named_a_cluster(monkeypatch):
    from pagetest import page_app

    monkeypatch.delenv("LEAKAGE_LAB_RAY", raising=False)
    at = page_app("app.py").run()
    assert not at.exception and not at.sidebar.toggle
    assert any("LEAKAGE_LAB_RAY=auto" in c.value for c in at.sidebar.caption)
    at.switch_page("app_pages/runs.py").run()   # a page that stops early (no runs yet)
    assert "No runs yet" in at.info[0].value
    assert any("LEAKAGE_LAB_RAY=auto" in c.value for c in at.sidebar.caption)
    monkeypatch.setenv("LEAKAGE_LAB_RAY", "auto")
    at = page_app("app.py").run()
    at.sidebar.toggle[0].set_value(True).run()
    at.sidebar.number_input[0].set_value(2).run()
    from ui import scaleout as ui_scaleout

    chosen = at.session_state["ray_on"], at.session_state["ray_workers"]
    assert chosen == (True, 2) and ui_scaleout.RAY_ENV == "LEAKAGE_LAB_RAY"


class _FakeRay:
    """Stands in for Ray in the pool's bookkeeping: records the workers it kills."""

    def __init__(self):
        self.killed = []

    def kill(self, actor):
        self.killed.append(actor)


class _FakeWorker:
    @classmethod
    def options(cls, **options):
        return cls

    @classmethod
    def remote(cls):
        return object()


def test_a_pool_in_use_is_never_torn_down_by_other_settings(monkeypatch):
    """Pools are per (device, workers) and leased: other settings tear down idle pools only; a
    pool in use ends with its last lease (then, or on a cancel, its workers are killed)."""
    from core.scaleout import ray_scoring as rs

    monkeypatch.setattr(rs, "_POOLS", {})
    monkeypatch.setattr(rs, "_worker_class", lambda: _FakeWorker)
    ray = _FakeRay()
    two = rs.lease(ray, ("cpu", 2))                # job A scores on 2 workers
    one = rs.lease(ray, ("cpu", 1))                # job B, submitted with 1, meanwhile
    assert len(two) == 2 and len(one) == 1 and ray.killed == []
    rs.release(ray, ("cpu", 2))                    # A's call ends: B's settings need the cluster
    assert ray.killed == two and list(rs._POOLS) == [("cpu", 1)]
    rs.release(ray, ("cpu", 1))                    # the only pool: kept warm for the next job
    assert rs.lease(ray, ("cpu", 1)) == one and rs.lease(ray, ("cpu", 1)) == one   # shared
    rs.release(ray, ("cpu", 1), stop=True)         # one job cancels: the other still holds it
    assert ray.killed == two
    rs.release(ray, ("cpu", 1), stop=True)
    assert ray.killed == two + one and not rs._POOLS


def test_one_page_jobs_worker_count_never_kills_another_running_job(ray_local, tiny_demo, corpus):
    """Two page jobs submitted with different worker counts (the sidebar changed between them):
    the first, mid-scoring on 2 workers, keeps them and finishes; the second waits for the
    cluster's CPUs, then scores on its 1 worker; both as in process."""
    from core.jobs import Store, get_runner
    from core.scaleout import ray_scoring

    lm = load_model(str(scenario.model_dir("base", tiny_demo)), device="cpu", dtype="float32")
    halves = corpus[:40], corpus[40:]
    expected = [[float(s.logprobs.sum()) for s in score_texts(lm, texts)] for texts in halves]
    clear_cache()
    paused, go = threading.Event(), threading.Event()

    def hold_after_one(fraction, message=""):
        if message.startswith("scored 1 of"):
            paused.set()
            go.wait(60)

    def job(texts, progress=None):
        return lambda p, c: [float(s.logprobs.sum()) for s in score_texts(lm, texts, progress=progress)]

    runner = get_runner()
    first = runner.submit("score", {}, job(halves[0], hold_after_one), scale_out=TWO_WORKERS)
    assert paused.wait(60)
    one_worker = scaleout.ScaleOut("auto", workers=1, shard_tokens=200)
    second = runner.submit("score", {}, job(halves[1]), scale_out=one_worker)
    for _ in range(1200):   # the second job has asked for its pool (it waits for a CPU)
        if ("cpu", 1) in ray_scoring._POOLS or Store().get(second).status == "failed":
            break
        time.sleep(0.05)
    go.set()
    runs = [runner.wait(run_id, 120) for run_id in (first, second)]
    assert [r.status for r in runs] == ["done", "done"], [r.error for r in runs]
    assert [r.placement["workers"] for r in runs] == [2, 1]
    for run, values in zip(runs, expected):
        assert run.result == pytest.approx(values, abs=1e-4)
