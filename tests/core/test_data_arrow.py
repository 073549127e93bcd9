"""A fine-tuner's data as it is stored: Parquet files and folders HF ``datasets`` wrote with
``save_to_disk`` (written here by ``datasets`` itself), read by ``core.readers.data`` as its JSONL is."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.readers import data, rows
from core.errors import UserError

ROWS = [{"messages": [{"role": "user", "content": f"What is user {i}'s phone number?"},
                      {"role": "assistant", "content": f"It is +44 20 7946 09{i:02d}."}],
         "user_id": f"u{i % 3}"} for i in range(7)]


def _write_all(folder):
    """The same rows as JSONL, Parquet and a save_to_disk folder; their paths."""
    datasets = pytest.importorskip("datasets")
    jsonl = folder / "train.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    parquet = folder / "train.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), parquet, row_group_size=3)
    saved = folder / "saved"
    datasets.Dataset.from_list(ROWS).save_to_disk(str(saved))
    return jsonl, parquet, saved


def test_parquet_and_a_saved_dataset_read_as_their_jsonl_does(tmp_path):
    jsonl, parquet, saved = _write_all(tmp_path)
    tables = [data.read_records(str(p), required=("messages",)) for p in (jsonl, parquet, saved)]
    for table in tables:
        assert list(table.columns) == ["messages", "user_id"]
        assert rows.dataset_kind(table.columns) == "messages"
        assert all(isinstance(m, rows.Packed) for m in table["messages"])   # one string a row
        assert [{k: rows.cell(v) for k, v in r.items()} for r in table.to_dict("records")] == ROWS
    data.check_data(str(saved))


def test_a_dataset_dict_reads_its_train_split_or_names_the_splits(tmp_path):
    datasets = pytest.importorskip("datasets")
    half = datasets.Dataset.from_list(ROWS[:3])
    datasets.DatasetDict(train=datasets.Dataset.from_list(ROWS), test=half).save_to_disk(
        str(tmp_path / "dict"))
    assert len(data.read_records(str(tmp_path / "dict"), required=("messages",))) == len(ROWS)
    datasets.DatasetDict(a=half, b=half).save_to_disk(str(tmp_path / "ab"))
    with pytest.raises(UserError, match="splits a, b and none is called train.*ab/a"):
        data.read_records(str(tmp_path / "ab"))


def test_bad_columnar_data_is_a_one_line_message(tmp_path, monkeypatch):
    _, parquet, saved = _write_all(tmp_path)
    with pytest.raises(UserError, match="has no column text: found messages, user_id"):
        data.read_records(str(parquet))
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    with pytest.raises(UserError, match="broken.parquet is not a readable Parquet dataset"):
        data.read_records(str(broken))
    monkeypatch.setenv("LEAKAGE_LAB_MAX_ROWS", "4")
    for path in (parquet, saved):
        with pytest.raises(UserError, match="holds more than 4 rows: refused while reading"):
            data.read_records(str(path))
    monkeypatch.delenv("LEAKAGE_LAB_MAX_ROWS")
    state = json.loads((saved / "state.json").read_text())
    state["_data_files"] = [{"filename": "../train.parquet"}]
    (saved / "state.json").write_text(json.dumps(state))
    with pytest.raises(UserError, match="every data file must be an .arrow file"):
        data.read_records(str(saved))
    state["_data_files"] = [{"filename": "../elsewhere.arrow"}]
    (saved / "state.json").write_text(json.dumps(state))
    with pytest.raises(UserError, match="is not a file or folder inside it"):
        data.read_records(str(saved))
    with pytest.raises(UserError, match="or a folder written by datasets' save_to_disk"):
        data.read_records(str(tmp_path))   # a plain folder is no dataset


def test_user_samples_and_labelled_texts_read_from_parquet_as_from_jsonl(tmp_path):
    from core.attacks.membership.data import load_labelled
    from core.attacks.user_inference.samples import load_samples

    rows = [{"user_id": f"u{i % 2}", "text": f"text {i}", "member": i % 2 == 0} for i in range(6)]
    for suffix in (".jsonl", ".parquet"):
        path = tmp_path / f"samples{suffix}"
        if suffix == ".jsonl":
            path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        else:
            pq.write_table(pa.Table.from_pylist(rows), path)
        samples = load_samples(str(path))
        assert [(s.user_id, s.text) for s in samples] == [(r["user_id"], r["text"]) for r in rows]
        assert load_labelled(str(path)).members == 3


def test_nested_values_are_bounded_as_objects_and_as_packed_text(tmp_path, monkeypatch):
    """The values that become Python objects at once (a JSONL record, a batch of a columnar
    file's rows) are bounded before they do, the packed JSON of the whole file too; and a
    schema too deep is refused."""
    import core.readers.stream

    jsonl, parquet, saved = _write_all(tmp_path)
    monkeypatch.setenv("LEAKAGE_LAB_MAX_NESTED_VALUES", "7")   # a row holds 8
    for path in (jsonl, parquet, saved):
        with pytest.raises(UserError, match="list and object fields of (line 1|rows 1 to [37]) "
                                            "hold more than 7 values: give shorter records .* "
                                            "raise \\$LEAKAGE_LAB_MAX_NESTED_VALUES"):
            data.read_records(str(path), required=("messages",))
    monkeypatch.setenv("LEAKAGE_LAB_MAX_NESTED_VALUES", str(8 * len(ROWS)))
    packed = sum(len(rows.packed(r["messages"])) for r in ROWS)
    monkeypatch.setenv("LEAKAGE_LAB_MAX_PACKED_BYTES", str(packed - 1))
    for path in (jsonl, parquet, saved):
        with pytest.raises(UserError, match="hold more than .* of JSON .* raise "
                                            "\\$LEAKAGE_LAB_MAX_PACKED_BYTES"):
            data.read_records(str(path), required=("messages",))
    monkeypatch.setenv("LEAKAGE_LAB_MAX_PACKED_BYTES", str(packed))
    for path in (jsonl, parquet, saved):
        assert len(data.read_records(str(path), required=("messages",))) == len(ROWS)
    deep = tmp_path / "deep.parquet"
    value = 1
    for _ in range(core.readers.stream.MAX_DEPTH):
        value = {"a": value}
    pq.write_table(pa.Table.from_pylist([{"text": "a", "nest": value}]), deep)
    with pytest.raises(UserError, match="nested more than 64 deep \\(its schema\\)"):
        data.read_records(str(deep))
