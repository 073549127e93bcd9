"""A page's data field takes a fine-tuner's Parquet file and a ``datasets`` save_to_disk folder
(issue #41): it says what it found there (the rows' type, the tokens scored), and Run enables
once the model has a chat template to render them with. (Data of other columns keeps Run
disabled: tests/pages/test_validation_data_files.py.)"""

import json

import pyarrow as pa
import pyarrow.parquet as pq

from pagetest import page_app


def _turns(i: int) -> list[dict]:
    return [{"role": "user", "content": f"hi {i}"}, {"role": "assistant", "content": "hello"}]


def _saved(folder, rows: list[dict]) -> None:
    """``rows`` in the layout ``Dataset.save_to_disk`` writes: an Arrow stream and state.json."""
    folder.mkdir()
    table = pa.Table.from_pylist(rows)
    with pa.ipc.new_stream(str(folder / "data-00000-of-00001.arrow"), table.schema) as out:
        out.write_table(table)
    (folder / "state.json").write_text(json.dumps(
        {"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}), encoding="utf-8")


TEMPLATE = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"


def test_a_data_field_reads_a_parquet_file_and_a_saved_dataset_and_says_what_they_hold(
        demo_home):
    """The demo's model has no chat template: Run stays disabled, saying so, until one is
    given (the run would stop on it)."""
    pq.write_table(pa.Table.from_pylist([{"prompt": _turns(i)[:1], "completion": _turns(i)[1:]}
                                         for i in range(4)]), demo_home / "pc.parquet")
    _saved(demo_home / "saved", [{"messages": _turns(i)} for i in range(5)])
    at = page_app("app_pages/lazy_risk.py").run()
    found = {"pc.parquet": ("4 prompt-completion rows (TRL's dataset type)", "the completions"),
             "saved": ("5 messages rows (TRL's dataset type)", "the assistant's turns")}
    for name, (kind, scored) in found.items():
        at.text_area(key="lr-chat_template").set_value("").run()
        at.text_input(key="lr-train-path").set_value(str(demo_home / name)).run()
        assert not at.exception
        assert any(c.value.startswith(kind) and scored in c.value for c in at.caption), name
        [refusal] = [e.value for e in at.error]
        assert refusal.startswith("demo:updated has no chat template"), refusal
        assert at.button(key="lr-run").disabled
        at.text_area(key="lr-chat_template").set_value(TEMPLATE).run()
        assert not at.exception and not at.error
        assert not at.button(key="lr-run").disabled
