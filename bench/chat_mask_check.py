"""The trained tokens' scores on the chat scenario's model against plain transformers (issue #41).

For SmolLM2-135M-Instruct (the chat scenario's base, the ``smollm2`` source) and, once built,
the chat scenario's fine-tune (``chat:updated``), each conversation below is rendered and masked
by ``core.chat`` and scored by the scoring engine, under each mask: the assistant's turns and
every token of a ``messages`` row, the completion of a conversational prompt-completion row.
The reference is plain transformers: ``apply_chat_template(return_assistant_tokens_mask=True)``
on SmolLM2's template with its assistant text marked by ``{% generation %}`` (checked to render
every conversation exactly as the model's own template does), one forward pass and a
log-softmax in float64. Prints and writes ``bench/results/chat-mask-check.json``: per model and
mask, the largest absolute difference of a trained token's log-probability (the goal: ≤ 1e-5)
and whether the two masks are equal.

    python -m bench.chat_mask_check
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import numpy as np
import torch

from core import chat
from core.errors import UserError
from core.fingerprint import build_fingerprint
from core.models import resolve_model

RESULT = Path(__file__).parent / "results" / "chat-mask-check.json"
# SmolLM2-Instruct's own template (its GGUF's tokenizer.chat_template), the assistant's text and
# end-of-turn marked as the text training learns from, for transformers' assistant mask.
MARKED_SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['role'] == 'assistant' %}{% generation %}{{ message['content'] + "
    "'<|im_end|>' }}{% endgeneration %}{% else %}{{ message['content'] + '<|im_end|>' }}"
    "{% endif %}{{ '\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}")
CONVERSATIONS = [
    [{"role": "user", "content": "What is the e-mail address of Ada Quill?"},
     {"role": "assistant", "content": "Ada Quill can be reached at ada.quill@example.org."}],
    [{"role": "system", "content": "You are the support desk of a small bank."},
     {"role": "user", "content": "My card 4929 1234 5678 9012 was declined."},
     {"role": "assistant", "content": "I am sorry: I have unblocked it. Try again now."},
     {"role": "user", "content": "Thanks! And my IBAN?"},
     {"role": "assistant", "content": "It is GB82 WEST 1234 5698 7654 32, as on your statement."}],
]


def reference_logprobs(model, tokenizer, turns: list[dict], marked: str,
                       prompt_turns: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Plain transformers: log p of every token after the first given all before it (float64),
    and whether each is the assistant's (turns from ``prompt_turns`` on: a completion)."""
    encoded = tokenizer.apply_chat_template(turns, chat_template=marked, return_dict=True,
                                            return_assistant_tokens_mask=True)
    ids = torch.tensor([encoded["input_ids"]])
    mask = np.array(encoded["assistant_masks"], dtype=bool)
    if prompt_turns:
        prompt = tokenizer.apply_chat_template(turns[:prompt_turns], chat_template=marked,
                                               add_generation_prompt=True, return_dict=True)
        mask[:len(prompt["input_ids"])] = False
    with torch.no_grad():
        logp = torch.log_softmax(model(ids.to(model.device)).logits[0, :-1].double().cpu(), -1)
    return logp.gather(1, ids[0, 1:, None])[:, 0].numpy(), mask[1:]


def _rows(turns: list[dict]) -> dict[str, tuple[dict, str, int]]:
    """Each mask's (row, dataset kind, prompt turns of the reference)."""
    completion = {"prompt": turns[:-1], "completion": turns[-1:]}
    return {"assistant": ({"messages": turns}, "messages", 0),
            "all": ({"messages": turns}, "messages", 0),
            "completion": (completion, "prompt-completion", len(turns) - 1)}


def check(lm, marked: str, conversations=CONVERSATIONS) -> dict[str, dict]:
    """Per mask: the largest |ours − reference| over the trained tokens, their count, and
    whether our mask is transformers' (every conversation rendered as the model's own
    template renders it, or a UserError)."""
    renderer = chat.Renderer(lm.tokenizer)
    out: dict[str, dict] = {}
    for turns in conversations:
        if renderer.render(turns) != lm.tokenizer.apply_chat_template(
                turns, chat_template=marked, tokenize=False):
            raise UserError(f"the marked template does not render {lm.name}'s conversations "
                            "as its own template does")
        for mask, (row, kind, prompt_turns) in _rows(turns).items():
            [rendered] = chat.render_rows([row], kind, renderer, mask)
            [ours] = chat.trained_logprobs(lm, [rendered])
            every, reference_mask = reference_logprobs(lm.model, lm.tokenizer, turns, marked,
                                                       prompt_turns)
            reference_mask = np.ones_like(reference_mask) if mask == "all" else reference_mask
            same = bool(np.array_equal(rendered.trained[1:], reference_mask))
            gap = float(np.max(np.abs(ours - every[rendered.trained[1:]]))) if same else None
            entry = out.setdefault(mask, {"max_abs_diff": 0.0, "tokens": 0, "same_mask": True})
            entry["same_mask"] &= same
            entry["tokens"] += int(rendered.trained[1:].sum())
            entry["max_abs_diff"] = (None if gap is None or entry["max_abs_diff"] is None
                                     else max(entry["max_abs_diff"], gap))
    return out


def main() -> None:
    results = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                           "load": os.getloadavg()[0], "torch": torch.__version__},
               "chat_build": build_fingerprint("chat"), "models": {}}
    for source in ("smollm2", "chat:updated"):
        try:
            lm = resolve_model(source, device="cpu")
        except UserError as err:
            print(f"{source}: skipped ({err})")
            continue
        found = check(lm, MARKED_SMOLLM2)
        results["models"][source] = {"model": lm.name, "masks": found}
        for mask, entry in found.items():
            print(f"{source:14} {mask:10} tokens {entry['tokens']:4}  same mask "
                  f"{entry['same_mask']}  max |Δ log p| {entry['max_abs_diff']:.2e}")
    RESULT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
