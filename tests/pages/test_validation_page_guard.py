"""A page never shows a traceback (issue #32): a page whose script raises shows one short line,
with no server path, and the traceback goes to the server's log."""

import logging

import ui.models
from pagetest import page_app


def test_a_page_that_raises_shows_a_short_message_and_logs_the_traceback(monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("cannot open /srv/lab/secret/weights.bin\n  in the loader")

    monkeypatch.setattr(ui.models, "model_fields", broken)
    at = page_app("app.py").run()
    with caplog.at_level(logging.ERROR):
        at.switch_page("app_pages/audit.py").run()
    assert not at.exception
    [shown] = [e.value for e in at.error]
    assert shown == ("Something went wrong on this page: RuntimeError: cannot open weights.bin "
                     "in the loader. Details are in the server log.")
    logged = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert "Traceback" in logged and "/srv/lab/secret/weights.bin" in logged
    assert "in broken" in logged   # the frame that raised
