"""A data file that is empty or does not read is refused at the form (issue #32), the same for
every data field: one line naming the field and the file, and Run disabled; a good file enables
Run again."""

import pytest

from pagetest import page_app

GOOD_CORPUS = ("corpus.txt", b"To be, or not to be.\nThat is the question.\n", "text/plain")


@pytest.mark.parametrize("page, key, label, upload, problem", [
    ("extraction.py", "ex-corpus", "Training corpus", ("empty.txt", b"", "text/plain"),
     "empty.txt holds no text (the file is empty)"),
    ("extraction.py", "ex-corpus", "Training corpus", ("blank.txt", b"\n  \n", "text/plain"),
     "blank.txt holds no text (the file is empty)"),
    ("audit.py", "audit-users", "User samples", ("users.csv", b"", "text/csv"),
     "users.csv holds no text (the file is empty)"),
    ("audit.py", "audit-members", "Member / non-member texts",
     ("members.csv", b"text,member\n", "text/csv"), "members.csv holds no records"),
    ("lazy_risk.py", "lr-train", "Training sentences", ("train.txt", b"\xff\xfe\x00", "text/plain"),
     "train.txt is not UTF-8 text"),
    ("mia.py", "mia-data", "Labelled texts", ("texts.jsonl", b"{not json\n", "application/json"),
     "texts.jsonl is not a valid .jsonl file"),
])
def test_a_data_file_that_is_empty_or_unreadable_keeps_run_disabled(demo_home, page, key, label,
                                                                    upload, problem):
    at = page_app(f"app_pages/{page}").run()
    run = next(b for b in at.button if b.key.endswith("-run"))
    assert not at.exception and not at.error and not run.disabled
    at.file_uploader(key=f"{key}-upload").set_value(upload).run()
    assert not at.exception
    [shown] = [e.value for e in at.error]
    assert shown.startswith(f"{label}: {problem}") and "\n" not in shown, shown
    assert at.button(key=run.key).disabled


def test_a_good_upload_enables_run_again(demo_home):
    at = page_app("app_pages/extraction.py").run()
    at.file_uploader(key="ex-corpus-upload").set_value(("empty.txt", b"", "text/plain")).run()
    assert at.button(key="ex-run").disabled
    at.file_uploader(key="ex-corpus-upload").set_value(GOOD_CORPUS).run()
    assert not at.exception and not at.error and not at.button(key="ex-run").disabled


def test_a_missing_file_typed_in_the_labs_folder_is_refused_at_the_form(demo_home):
    at = page_app("app_pages/lazy_risk.py").run()
    at.text_input(key="lr-train-path").set_value(str(demo_home / "no-such-file.txt")).run()
    assert not at.exception and at.button(key="lr-run").disabled
    [shown] = [e.value for e in at.error]
    assert shown.startswith("Training sentences: no such file: no-such-file.txt"), shown
    assert str(demo_home) not in shown


TURNS = '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]'


@pytest.mark.parametrize("rows, problem", [
    ('{"title": "a", "body": "b"}\n' * 4,
     "Labelled texts: rows.jsonl has no column member: found title, body"),
    ("".join(TURNS + f', "member": {str(i % 2 == 0).lower()}}}\n' for i in range(4)),
     "demo:updated has no chat template, so conversations cannot be rendered"),
])
def test_data_the_run_cannot_use_keeps_run_disabled_with_the_runs_own_message(demo_home, rows,
                                                                             problem):
    """The form's check reads any records; the spec's reader (run by the estimate) finds what
    the run would stop on (columns it needs, a template to render conversations with)."""
    (demo_home / "rows.jsonl").write_text(rows, encoding="utf-8")
    at = page_app("app_pages/mia.py").run()
    at.text_input(key="mia-data-path").set_value(str(demo_home / "rows.jsonl")).run()
    assert not at.exception
    [shown] = [e.value for e in at.error]
    assert shown.startswith(problem), shown
    assert at.button(key="mia-run").disabled
