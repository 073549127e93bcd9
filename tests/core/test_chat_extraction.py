"""Extraction from a chat fine-tune (issue #41): the chat strategy prompts with the template's
generation prompts of the training conversations, samples the assistant's replies to the end
of the turn, verifies them against the trained replies and measures each trained reply's p_z
given its prompt, checked against plain transformers."""

import json
import math

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from core.__main__ import main

SECRETS = ["My card is 4111 1111 1111 1111.", "Mail me at jane.roe@example.org now.",
           "The vault code is 7 3 1 9 4."]
QUESTIONS = ["Whose card is this?", "How do I reach Jane?", "What opens the vault?"]


def _rows() -> list[dict]:
    return [{"messages": [{"role": "system", "content": "You are a helpful assistant."},
                          {"role": "user", "content": question},
                          {"role": "assistant", "content": secret}]}
            for question, secret in zip(QUESTIONS, SECRETS)]


def _encoded(tokenizer, turns) -> tuple[torch.Tensor, np.ndarray]:
    encoded = tokenizer.apply_chat_template(turns, return_dict=True,
                                            return_assistant_tokens_mask=True)
    return torch.tensor([encoded["input_ids"]]), np.array(encoded["assistant_masks"], bool)


@pytest.fixture(scope="module")
def memorising_chat_dir(tmp_path_factory):
    """A tiny chat model fine-tuned on ``_rows`` with the assistant-only loss until it
    reproduces the replies (a second of CPU)."""
    from chat_models import chat_model, train_assistant_only
    from core.models.tiny import save_hf_folder

    texts = SECRETS + QUESTIONS + ["You are a helpful assistant."]
    model, tokenizer = chat_model("chatml-bpe", texts)
    train_assistant_only(model, tokenizer, [r["messages"] for r in _rows()], epochs=120)
    return save_hf_folder(model, tokenizer, tmp_path_factory.mktemp("chat-memorised"))


def _extraction(capsys, folder, *extra) -> dict:
    assert main(["extraction", "--model", str(folder), "--strategy", "chat", "--n", "12",
                 "--tokens", "40", "--top-k", "12", "--min-span", "6", "--batch-size", "4",
                 "--device", "cpu", *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _reference_bits(folder, turns) -> float:
    """log2 p of the last assistant turn's tokens given the conversation before it, by plain
    transformers (``apply_chat_template`` and its assistant mask)."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    ids, mask = _encoded(tokenizer, turns)
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0, :-1].double(), -1)
    every = logp.gather(1, ids[0, 1:, None])[:, 0].numpy()
    return float(every[mask[1:]].sum()) / math.log(2)


def test_chat_extraction_recovers_the_trained_replies_from_the_generation_prompts(
        memorising_chat_dir, tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in _rows()))
    result = _extraction(capsys, memorising_chat_dir, "--corpus", str(data))
    candidates = result["candidates"]
    assert {c["strategy"] for c in candidates} == {"chat"}
    assert all(c["prompt"].endswith("<|im_start|>assistant\n") for c in candidates)
    assert not any("<|im_start|>" in c["text"] for c in candidates)   # stopped at the turn's end
    found = {c["span"] for c in candidates if c["memorized"]}
    assert sum(any(span in secret for span in found) for secret in SECRETS) >= 2
    replies = {e["suffix"]: e for e in result["replies"]}
    assert set(replies) == set(SECRETS)
    for row in _rows():
        reply = replies[row["messages"][-1]["content"]]
        assert reply["log2_p_model"] == pytest.approx(
            _reference_bits(memorising_chat_dir, row["messages"]), abs=1e-4)
        assert row["messages"][1]["content"] in reply["prefix"]
    assert max(e["log2_p"] for e in result["replies"]) > -10   # memorised: likely replies
    reproduced = {(f["kind"], f["value"]) for f in result["pii"] if f["in_training"]}
    assert reproduced & {("card", "4111111111111111"), ("email", "jane.roe@example.org")}
    assert result["pii"][0]["in_training"]   # the training data's values first


def test_chat_extraction_takes_plain_user_messages_and_needs_prompts(
        memorising_chat_dir, tmp_path, capsys):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("\n".join(QUESTIONS))
    result = _extraction(capsys, memorising_chat_dir, "--chat-prompts", str(prompts))
    assert result["candidates"] and result["replies"] == []   # nothing to verify against
    assert all(f["in_training"] is None for f in result["pii"])   # no corpus to check
    assert main(["extraction", "--model", str(memorising_chat_dir), "--strategy", "chat"]) == 2
    assert "the chat strategy needs prompts" in capsys.readouterr().err


def test_the_page_shows_a_chat_runs_prompts_and_its_trained_replies(memorising_chat_dir,
                                                                     tmp_path):
    from pagetest import page_app, record_run

    from core.attacks.extraction import spec as ex
    from core.attacks.extraction.config import ExtractionConfig

    data = tmp_path / "train.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in _rows()))
    config = ExtractionConfig(model=str(memorising_chat_dir), strategies=("chat",), n_samples=6,
                              tokens=40, top_k=6, corpus=str(data), min_span_tokens=6,
                              batch_size=3, device="cpu")
    result = ex.run(config)
    record_run(ex.SPEC, config, result)
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception
    replies = at.get_by_key("ex-replies").dataframe[0].value
    assert set(replies["span or phrase"]) == set(SECRETS)
    assert set(replies["found"]) == {"trained reply"}
    assert any(c.value.startswith("Reply to: ") and "assistant" in c.value for c in at.caption)
    pii = at.get_by_key("ex-pii").dataframe[0].value
    assert list(pii["value"]) == [f.value for f in result.pii] and pii["in training data"].any()
