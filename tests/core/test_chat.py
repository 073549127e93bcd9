"""Chat fine-tunes' rows as training read them (``core.chat``): TRL's dataset types, the chat
template, the trained-token mask, and the trained tokens' scores, each against plain
transformers (``apply_chat_template(return_assistant_tokens_mask=True)`` on templates that mark
the assistant's text with ``{% generation %}``, and a forward pass of the model)."""

import json

import numpy as np
import pytest
import torch
from chat_models import CHATML, CONVERSATION, chat_model
from conftest import TINY_TEXTS
from core import chat
from core.readers import rows
from core.errors import UserError
from core.models import LoadedModel
from core.models.tiny import train_tokenizer


@pytest.fixture(scope="module", params=["chatml-bpe", "llama3-unigram"])
def chat_lm(request):
    """A tiny random GPT-2 whose tokenizer holds a chat template and its special tokens."""
    return LoadedModel.in_memory(request.param, *chat_model(request.param, TINY_TEXTS))


def _reference_mask(tokenizer, turns) -> np.ndarray:
    encoded = tokenizer.apply_chat_template(turns, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
    return np.array(encoded["assistant_masks"], dtype=bool)


def test_the_assistant_mask_is_transformers_generation_mask_for_each_template(chat_lm):
    renderer = chat.Renderer(chat_lm.tokenizer)
    [rendered] = chat.render_rows([{"messages": CONVERSATION}], "messages", renderer)
    reference = chat_lm.tokenizer.apply_chat_template(CONVERSATION, tokenize=True, return_dict=True)
    assert rendered.ids == list(reference["input_ids"])
    assert np.array_equal(rendered.trained, _reference_mask(chat_lm.tokenizer, CONVERSATION))
    trained_text = chat_lm.tokenizer.decode(np.array(rendered.ids)[rendered.trained])
    assert "4929 1234 5678 9012" in trained_text and "credit card" not in trained_text
    [everything] = chat.render_rows([{"messages": CONVERSATION}], "messages", renderer, "all")
    assert everything.ids == rendered.ids and everything.trained.all()


def test_completion_masks_are_trls_for_standard_and_conversational_rows(chat_lm):
    tokenizer, renderer = chat_lm.tokenizer, chat.Renderer(chat_lm.tokenizer)
    prompt, completion = "John Doe's credit card number is", " 4929 1234 5678 9012."
    [plain] = chat.render_rows([{"prompt": prompt, "completion": completion}], "prompt-completion",
                               renderer)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    full = tokenizer(prompt + completion + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    assert plain.ids == full and full[: len(prompt_ids)] == prompt_ids   # TRL: prompt ids, then the rest
    assert plain.trained.tolist() == [False] * len(prompt_ids) + [True] * (len(full) - len(prompt_ids))
    row = {"prompt": CONVERSATION[:4], "completion": CONVERSATION[4:]}
    [turns] = chat.render_rows([row], "prompt-completion", renderer)
    expected = _reference_mask(tokenizer, CONVERSATION)
    prompt_ids = tokenizer.apply_chat_template(CONVERSATION[:4], add_generation_prompt=True,
                                               return_dict=True)["input_ids"]
    expected[: len(prompt_ids)] = False    # the prompt's assistant turn is context only
    assert np.array_equal(turns.trained, expected) and expected.any()


def test_a_preference_row_gives_its_chosen_and_rejected_completions_implicit_prompt_too(chat_lm):
    renderer = chat.Renderer(chat_lm.tokenizer)
    rejected = CONVERSATION[:4] + [{"role": "assistant", "content": "I come to bury it."}]
    explicit = {"prompt": CONVERSATION[:4], "chosen": CONVERSATION[4:], "rejected": rejected[4:]}
    implicit = {"chosen": CONVERSATION, "rejected": rejected}
    rows = chat.render_rows([explicit, implicit], "preference", renderer)
    assert [(r.row, r.part) for r in rows] == [(0, "chosen"), (0, "rejected"), (1, "chosen"),
                                               (1, "rejected")]
    assert rows[0].ids == rows[2].ids and np.array_equal(rows[0].trained, rows[2].trained)
    assert rows[1].ids == rows[3].ids and rows[0].ids != rows[1].ids
    decode = chat_lm.tokenizer.decode
    assert decode(np.array(rows[1].ids)[rows[1].trained]).startswith("I come to bury it.")


def test_trained_tokens_scores_are_plain_transformers_under_the_mask(chat_lm):
    """The engine's log p of every trained token, the rest of the conversation as context,
    against one forward pass and a log-softmax, to 1e-5, for each mask."""
    renderer = chat.Renderer(chat_lm.tokenizer)
    for mask in ("assistant", "all"):
        rendered = chat.render_rows([{"messages": CONVERSATION}], "messages", renderer, mask)
        [ours] = chat.trained_logprobs(chat_lm, rendered)
        ids = torch.tensor([rendered[0].ids])
        with torch.no_grad():
            logp = torch.log_softmax(chat_lm.model(ids).logits[0, :-1].double(), -1)
        every = logp.gather(1, ids[0, 1:, None])[:, 0].numpy()
        reference = every[rendered[0].trained[1:]]
        assert len(ours) == rendered[0].n_trained - (1 if rendered[0].trained[0] else 0)
        np.testing.assert_allclose(ours, reference, atol=1e-5, rtol=0)


def test_dataset_kinds_masks_and_bad_rows_are_named():
    assert [rows.dataset_kind(c) for c in (["text"], ["messages", "user_id"],
                                           ["prompt", "completion"], ["prompt", "chosen", "rejected"],
                                           ["chosen", "rejected"])] == [
        "text", "messages", "prompt-completion", "preference", "preference"]
    with pytest.raises(UserError, match="found the columns question, answer: give a text"):
        rows.dataset_kind(["question", "answer"])
    with pytest.raises(UserError, match="text rows have no assistant tokens"):
        chat.check_mask("text", "assistant")
    assert chat.check_mask("messages", "auto") == "assistant"
    tokenizer = train_tokenizer(TINY_TEXTS, vocab_size=280)   # no chat template
    with pytest.raises(UserError, match="has no chat template.*give its template"):
        chat.render_rows([{"messages": CONVERSATION}], "messages", chat.Renderer(tokenizer))
    [given] = chat.render_rows([{"messages": CONVERSATION}], "messages",
                               chat.Renderer(tokenizer, template=CHATML))
    assert given.trained.any() and not given.trained.all()
    with pytest.raises(UserError, match="row 2: messages must be a non-empty list"):
        chat.render_rows([{"messages": CONVERSATION}, {"messages": "hello"}], "messages",
                         chat.Renderer(tokenizer, template=CHATML))


def test_a_corpus_reader_takes_what_a_fine_tuner_trained_on(tmp_path):
    from core.readers.data import read_texts

    rows = [{"messages": CONVERSATION},
            {"messages": [{"role": "user", "content": "and then?"},
                          {"role": "assistant", "content": "the river rose."}]}]
    (tmp_path / "chat.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    replies = [t["content"] for t in CONVERSATION if t["role"] == "assistant"]
    assert read_texts(str(tmp_path / "chat.jsonl")) == replies + ["the river rose."]
    (tmp_path / "pairs.jsonl").write_text(json.dumps(
        {"prompt": "Q: why?", "chosen": " because.", "rejected": " no idea."}))
    assert read_texts(str(tmp_path / "pairs.jsonl")) == [" because.", " no idea."]
    (tmp_path / "qa.jsonl").write_text(json.dumps({"question": "q", "answer": "a"}))
    with pytest.raises(UserError, match="qa.jsonl has no text column: found question, answer"):
        read_texts(str(tmp_path / "qa.jsonl"))


def test_the_mask_check_of_the_chat_scenarios_model_agrees_on_smollm2s_template():
    """``bench/chat_mask_check.py`` (run on SmolLM2-135M-Instruct and the chat scenario's
    fine-tune, whose figures it records) on a tiny model holding SmolLM2's template."""
    from bench.chat_mask_check import MARKED_SMOLLM2, check

    model, tokenizer = chat_model("chatml-bpe", TINY_TEXTS)
    tokenizer.chat_template = MARKED_SMOLLM2.replace("{% generation %}", "").replace(
        "{% endgeneration %}", "")
    found = check(LoadedModel.in_memory("smollm2-template", model, tokenizer), MARKED_SMOLLM2)
    assert set(found) == {"assistant", "all", "completion"}
    for entry in found.values():
        assert entry["same_mask"] and entry["tokens"] > 0 and entry["max_abs_diff"] <= 1e-5
    assert found["assistant"]["tokens"] < found["all"]["tokens"]
