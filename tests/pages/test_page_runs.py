"""The Runs page: list, open, compare and delete recorded runs; failures and interruptions shown;
a finished run reopens as its own page draws it."""

import pytest

from core.jobs import Store, run_now
from core.registry import get_spec
from pagetest import page_app


def _runs():
    store = Store()
    done = store.create("user-inference", {"m": 4, "model": "demo:updated"})
    store.start(done)
    store.finish(done, "done", result={"auroc": 0.9, "rows": [{"user": "A", "t": 1.5}]})
    failed = store.create("user-inference", {"m": 8, "model": "demo:updated"})
    store.start(failed)
    store.finish(failed, "failed", error="model 'demo:updated' is not loaded: load it on Models")
    interrupted = store.create("extraction", {"n": 100}, title="extract 100")
    store.start(interrupted)
    store.report(interrupted, 0.3, "generating", partial={"samples": ["to be or not"]})
    store.finish(interrupted, "interrupted")
    return done, failed, interrupted


def test_runs_page_without_runs_says_so():
    at = page_app("app_pages/runs.py").run()
    assert not at.exception
    assert "No runs yet" in at.info[0].value


def test_runs_page_lists_opens_and_shows_failures_and_partials():
    done, failed, interrupted = _runs()
    at = page_app("app_pages/runs.py").run()
    assert not at.exception
    assert list(at.dataframe[0].value["id"]) == [interrupted, failed, done]
    assert at.selectbox(key="run").value == interrupted  # newest first
    assert "interrupted" in at.warning[0].value and "30%" in at.warning[0].value
    assert at.json[-1].value == '{"samples": ["to be or not"]}'
    at.selectbox(key="run").set_value(failed).run()
    assert "model 'demo:updated' is not loaded" in at.error[0].value
    at.selectbox(key="run").set_value(done).run()
    assert not at.error and '"auroc": 0.9' in at.json[1].value
    at.selectbox(key="kind").set_value("extraction").run()  # filter by kind
    assert list(at.dataframe[0].value["id"]) == [interrupted]


def test_runs_page_deletes_after_confirmation():
    done, failed, interrupted = _runs()
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(done).run()
    assert at.button(key="delete-run").disabled
    at.checkbox(key=f"confirm-delete-{done}").check().run()
    at.button(key="delete-run").click().run()
    assert not at.exception
    assert f"Deleted run #{done}" in at.success[0].value
    assert [r.id for r in Store().runs()] == [interrupted, failed]
    assert done not in list(at.dataframe[0].value["id"])


def test_runs_page_compares_two_runs():
    done, failed, _ = _runs()
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="compare-a").set_value(done).run()
    at.selectbox(key="compare-b").set_value(failed).run()
    assert not at.exception
    params = at.dataframe[1].value
    assert list(params["field"]) == ["m"] and list(params["B − A"]) == [4]


def _record(name: str) -> int:
    spec = get_spec(name)
    run_now(spec, spec.tiny_config(), progress=lambda *a, **k: None)
    return Store().runs(name)[0].id


@pytest.fixture
def real_runs(demo_home):
    """One finished tiny run of an attack, of user inference and of a lab, made by their specs."""
    return {name: _record(name) for name in ("extraction", "user-inference", "gradient-leakage")}


def test_runs_reopen_as_their_pages_draw_them(real_runs):
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(real_runs["extraction"]).run()
    assert not at.exception and not at.error
    assert at.selectbox(key=f"run-{real_runs['extraction']}-show-strategy").value == "top-n"
    assert at.get("plotly_chart")  # the per-token heat map
    at.selectbox(key="run").set_value(real_runs["user-inference"]).run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) >= 3  # histograms and the two ROC views
    at.selectbox(key="run").set_value(real_runs["gradient-leakage"]).run()
    assert not at.exception
    assert [m.label for m in at.metric] == ["Image MSE", "Labels recovered", "Iterations run"]
    assert len(at.json) == 1  # the parameters only: no raw result tree


def test_compare_only_pairs_runs_of_one_kind(real_runs):
    second = _record("gradient-leakage")
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="compare-a").set_value(real_runs["extraction"]).run()
    assert "No other run of this kind" in at.info[0].value
    at.selectbox(key="compare-a").set_value(real_runs["gradient-leakage"]).run()
    assert at.selectbox(key="compare-b").value == second
    assert len(at.selectbox(key="compare-b").options) == 1
    assert not at.exception
    metrics = at.dataframe[-1].value
    assert set(metrics["metric"]) == {"mse", "label_accuracy", "iterations"}


def test_the_page_decodes_only_the_runs_it_opens_and_keeps_one_store(monkeypatch):
    """However many runs are stored, a rerun decodes the results of the run opened and of the two
    compared, and opens no new store."""
    import core.jobs.store as store_module

    store = Store()
    for m in range(30):
        run_id = store.create("mia", {"m": m})
        store.finish(run_id, "done", result={"auroc": 0.5, "rows": [{"m": m}] * 50})
    decoded, opened = [], []
    loads, init = store_module._loads, store_module.Store.__init__
    monkeypatch.setattr(store_module, "_loads",
                        lambda text: decoded.append(text) or loads(text))
    monkeypatch.setattr(store_module.Store, "__init__",
                        lambda self, *a, **k: opened.append(1) or init(self, *a, **k))
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="run").set_value(run_id - 5).run()
    assert not at.exception
    results = [text for text in decoded if text and '"rows"' in text]
    assert len(results) <= 2 * 3     # two reruns: the run opened, compare's A and B
    assert len(opened) <= 1
