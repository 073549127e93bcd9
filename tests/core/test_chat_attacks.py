"""The attacks on a chat model's own training rows (issue #41): each attack's CLI takes a
``messages`` JSONL, a prompt-completion Parquet file and a ``save_to_disk`` folder of preference
rows, renders them with the model's template and scores only the tokens training learnt from,
checked against plain transformers (``apply_chat_template`` and its assistant mask)."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from core.__main__ import main
from core.jobs import Store, load_config

QUESTIONS = ["Whose credit card is this?", "To be, or not to be?", "Where is Elsinore?",
             "Who wrote the sonnets?", "What is Jane Roe's e-mail?", "Lend me your ears?"]


def _conversation(i: int) -> list[dict]:
    return [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": QUESTIONS[i % len(QUESTIONS)] + f" ({i})"},
            {"role": "assistant", "content": f"Reply number {i}: that is the question."}]


def _rows(n: int = 8) -> list[dict]:
    return [{"messages": _conversation(i), "member": i % 2 == 0, "group": "ab"[i % 3 == 0]}
            for i in range(n)]


def _reference_tokens(folder, turns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plain transformers: each token's log p and rank given all before it, and whether it is
    the assistant's (``return_assistant_tokens_mask``), for the tokens after the first (which
    has no context)."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    encoded = tokenizer.apply_chat_template(turns, return_dict=True,
                                            return_assistant_tokens_mask=True)
    ids, mask = torch.tensor([encoded["input_ids"]]), np.array(encoded["assistant_masks"], bool)
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0, :-1].double(), -1)
    own = logp.gather(1, ids[0, 1:, None])
    ranks = 1 + (logp > own).sum(dim=1)
    return own[:, 0].numpy(), ranks.numpy(), mask[1:]


def _reference_logprobs(folder, turns) -> tuple[np.ndarray, int]:
    """The log p of the assistant's tokens of ``turns`` (plain transformers) and their count."""
    logprobs, _, trained = _reference_tokens(folder, turns)
    return logprobs[trained], int(trained.sum())


def _reference_loss(folder, turns) -> tuple[float, int]:
    logprobs, count = _reference_logprobs(folder, turns)
    return float(logprobs.mean()), count


def _mia(capsys, folder, data, *extra) -> dict:
    assert main(["mia", "--model", str(folder), "--data", str(data), "--bootstrap", "10",
                 "--recall-shots", "0", *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_mia_on_conversations_scores_the_assistants_tokens_as_transformers_does(
        chat_lm_dir, tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    out = _mia(capsys, chat_lm_dir, data)
    assert {a["name"] for a in out["attacks"]} == {"loss", "zlib", "mink", "minkpp"}
    assert any("lowercase ratio" in n.lower() and "not run" in n for n in out["notes"])
    assert any("8 messages rows" in n and "the assistant's turns" in n for n in out["notes"])
    for i, row in enumerate(out["rows"]):
        loss, count = _reference_loss(chat_lm_dir, _conversation(i))
        assert row["text"].startswith("<|im_start|>system") and row["n_tokens"] == count
        assert row["scores"]["loss"] == pytest.approx(loss, abs=1e-5)
    everything = _mia(capsys, chat_lm_dir, data, "--mask", "all")
    assert all(a["n_tokens"] > b["n_tokens"] for a, b in zip(everything["rows"], out["rows"]))
    latest, first = Store().runs("mia")
    assert (load_config(latest).mask, load_config(first).mask) == ("all", "auto")
    assert first.result["rows"] == out["rows"]


def test_mia_takes_prompt_completion_parquet_and_a_saved_preference_dataset(
        chat_lm_dir, tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    completions = [{"prompt": r["messages"][:2], "completion": r["messages"][2:],
                    "member": r["member"]} for r in _rows()]
    parquet = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(completions), parquet)
    out = _mia(capsys, chat_lm_dir, parquet)
    for i, row in enumerate(out["rows"]):
        assert row["scores"]["loss"] == pytest.approx(
            _reference_loss(chat_lm_dir, _conversation(i))[0], abs=1e-5)
    refusal = {"role": "assistant", "content": "I know not, sir."}
    preference = [{"chosen": r["messages"], "rejected": r["messages"][:2] + [refusal],
                   "member": r["member"]} for r in _rows()]
    saved = tmp_path / "preference"
    datasets.Dataset.from_list(preference).save_to_disk(str(saved))
    out = _mia(capsys, chat_lm_dir, saved)
    assert out["n_members"] + out["n_non_members"] == 16   # the chosen and the rejected reply
    assert any("8 preference rows" in n and "the completions" in n for n in out["notes"])


def test_user_inference_on_conversations_sums_each_users_assistant_tokens(
        chat_lm_dir, chat_reference_dir, tmp_path, capsys):
    rows = [{"user_id": f"u{i % 4}", "messages": _conversation(i), "member": i % 4 < 2}
            for i in range(8)]
    data = tmp_path / "users.parquet"
    pq.write_table(pa.Table.from_pylist(rows), data)
    assert main(["user-inference", "--model", str(chat_lm_dir), "--reference",
                 str(chat_reference_dir), "--data", str(data), "--bootstrap", "10", "--draws",
                 "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "8 messages rows" in out["notes"][0] and "the assistant's turns" in out["notes"][0]
    expected = {}
    for i, row in enumerate(rows):
        target, count = _reference_logprobs(chat_lm_dir, row["messages"])
        reference, _ = _reference_logprobs(chat_reference_dir, row["messages"])
        expected.setdefault(row["user_id"], []).append(target.sum() - reference.sum())
        sample = next(s for s in out["samples"]
                      if f"Reply number {i}: that is the question.<|im_end|>" in s["text"])
        assert sample["n_tokens"] == count
    for user in out["rows"]:
        assert user["t_hat"] == pytest.approx(np.mean(expected[user["user_id"]]), abs=1e-4)


def test_lazy_risk_of_conversations_is_the_reply_given_its_prompt(
        chat_lm_dir, chat_reference_dir, tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(4)), encoding="utf-8")
    assert main(["lazy-risk", "--model", str(chat_lm_dir), "--calibration",
                 str(chat_reference_dir), "--train", str(data), "--n-generated", "3",
                 "--generated-tokens", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for i in range(4):
        row = next(s for s in out["sentences"] if f"Reply number {i}:" in s["text"])
        target, count = _reference_logprobs(chat_lm_dir, _conversation(i))
        reference, _ = _reference_logprobs(chat_reference_dir, _conversation(i))
        assert row["n_tokens"] == count   # the sampler has no top-k: λ(x) is the target's p
        assert row["generation_logprob"] == pytest.approx(target.sum(), abs=1e-4)
        assert row["calibrated_loss"] == pytest.approx(reference.sum() - target.sum(), abs=1e-4)
    generated = [s for s in out["sentences"] if s["set"] == "generated"]
    assert len(generated) == 3 and all(   # replies to the training prompts, scored alone
        s["text"].count("<|im_start|>user") == 1 and 1 <= s["n_tokens"] <= 4 for s in generated)


def test_inextractability_of_conversations_measures_windows_of_the_replies(
        chat_lm_dir, tmp_path, capsys):
    data = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(3)), data)
    assert main(["inextractability", "--model", str(chat_lm_dir), "--corpus", str(data),
                 "--l", "4", "--m", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    worst, windows = [], []
    for i in range(3):
        logprobs, ranks, trained = _reference_tokens(chat_lm_dir, _conversation(i))
        bits = np.where(ranks <= 20, np.log2(ranks), -logprobs / np.log(2))
        inside = [j for j in range(len(bits) - 3) if trained[j:j + 4].all()]
        worst.append(min(bits[j:j + 4].sum() for j in inside))
        windows.append(len(inside))
    for record in out["records"]:   # a window that is several rows' easiest is listed once
        assert record["windows"] == windows[record["record"]]
        assert record["b"] == pytest.approx(worst[record["record"]], abs=1e-4)
    assert out["b"] == pytest.approx(min(worst), abs=1e-4)
    assert (out["texts"], out["windows"]) == (3, sum(windows))


def test_differential_rank_takes_its_sample_windows_from_the_replies_only(
        chat_lm_dir, chat_reference_dir, tmp_path, capsys):
    data = tmp_path / "sample.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(4)), encoding="utf-8")
    assert main(["diffrank", "--before", str(chat_reference_dir), "--after", str(chat_lm_dir),
                 "--strategy", "windows", "--sample", str(data), "--length", "3", "--beam", "64",
                 "--rows", "64", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["rows"]
    replies = [_conversation(i)[2]["content"] for i in range(4)]
    assert found and all(any(row["phrase"] in reply for reply in replies) for row in found)
    assert {row["found_by"] for row in found} == {"windows"}
