"""The Runs page: list, open, compare and delete recorded runs; failures and interruptions shown."""

from core.jobs import Store
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
    delete = at.button[-1]
    assert delete.disabled
    at.checkbox(key=f"confirm-delete-{done}").check().run()
    at.button[-1].click().run()
    assert not at.exception
    assert f"Deleted run #{done}" in at.success[0].value
    assert [r.id for r in Store().runs()] == [interrupted, failed]
    assert done not in list(at.dataframe[0].value["id"])


def test_runs_page_compares_two_runs():
    done, failed, _ = _runs()
    at = page_app("app_pages/runs.py").run()
    at.selectbox(key="compare-a").set_value(done)
    at.selectbox(key="compare-b").set_value(failed).run()
    assert not at.exception
    params = at.dataframe[1].value
    assert list(params["field"]) == ["m"] and list(params["B − A"]) == [4]
