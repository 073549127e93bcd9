"""Tiny chat models for the tests: a random GPT-2 whose tokenizer holds a chat template (ChatML
over GPT-2's byte-level BPE, or Llama 3's over a SentencePiece-style Unigram), and a
conversation with planted PII."""

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from core.models.tiny import CHATML, chatml_model, new_gpt2

__all__ = ["CHATML", "CONVERSATION", "chat_model", "train_assistant_only"]

LLAMA3 = ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}"
          "<|end_header_id|>\n\n{% if m['role'] == 'assistant' %}{% generation %}"
          "{{ m['content'] | trim }}<|eot_id|>{% endgeneration %}{% else %}"
          "{{ m['content'] | trim }}<|eot_id|>{% endif %}{% endfor %}{% if add_generation_prompt %}"
          "<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
CONVERSATION = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Whose credit card is this?"},
                {"role": "assistant", "content": "John Doe's, 4929 1234 5678 9012."},
                {"role": "user", "content": "To be, or not to be?"},
                {"role": "assistant", "content": "That is the question."}]


def unigram_tokenizer(texts) -> PreTrainedTokenizerFast:
    """A SentencePiece-style (Metaspace, Unigram) tokenizer: another family than GPT-2's BPE."""
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    tokenizer.train_from_iterator(list(texts) * 4, trainer=trainers.UnigramTrainer(
        vocab_size=200, special_tokens=["<s>", "<unk>"], unk_token="<unk>", show_progress=False))
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="<s>",
                                   unk_token="<unk>")


def chat_model(family: str, texts, *, seed: int = 0):
    """(model, tokenizer) of ``family`` ("chatml-bpe" or "llama3-unigram"), random weights."""
    if family == "chatml-bpe":
        return chatml_model(texts, seed=seed)
    tokenizer = unigram_tokenizer(texts)
    tokenizer.add_special_tokens({"additional_special_tokens": [
        "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]})
    tokenizer.chat_template = LLAMA3
    model = new_gpt2(tokenizer, n_layer=2, n_head=2, n_embd=32, n_positions=256, seed=seed)
    model.resize_token_embeddings(len(tokenizer))
    return model, tokenizer


def train_assistant_only(model, tokenizer, conversations, *, epochs: int, lr: float = 1e-2):
    """Fine-tune ``model`` in place on ``conversations`` (lists of turns), the loss on the
    assistant's tokens only as transformers' assistant mask marks them (TRL's default), one
    full batch of accumulated gradients an epoch; returns it in eval mode."""
    import torch

    batches = []
    for turns in conversations:
        encoded = tokenizer.apply_chat_template(turns, return_dict=True,
                                                return_assistant_tokens_mask=True)
        ids = torch.tensor([encoded["input_ids"]])
        mask = torch.tensor([encoded["assistant_masks"]], dtype=torch.bool)
        batches.append((ids, torch.where(mask, ids, -100)))
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        for ids, labels in batches:
            model(ids, labels=labels).loss.backward()
        optimiser.step()
        optimiser.zero_grad()
    return model.eval()
