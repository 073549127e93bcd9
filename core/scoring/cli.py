"""`python -m core score --model M --input FILE [--top-k K --temperature T] --json`."""

from __future__ import annotations

import json
from pathlib import Path

from core.errors import UserError
from core.models.registry import DEVICES, resolve_model
from core.scoring.engine import Sampler, score_texts


def register(sub) -> None:
    parser = sub.add_parser("score", help="per-token log-probabilities of texts under a model")
    parser.add_argument("--model", required=True, help="a model source (folder, .zip, .gguf, demo:base, smollm2, ...)")
    parser.add_argument("--input", required=True, help="a text file (one text per line) or a .json list of strings")
    parser.add_argument("--top-k", type=int, default=None, help="score under a top-k sampler")
    parser.add_argument("--temperature", type=float, default=1.0, help="score under this sampling temperature")
    parser.add_argument("--device", choices=DEVICES, default="auto")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.set_defaults(func=score_command)


def read_texts(path: Path) -> list[str]:
    """Texts from a .json list of strings, or one per non-blank line of a text file."""
    if not path.is_file():
        raise UserError(f"no such input file: {path}")
    try:
        content = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path.name} is not UTF-8 text") from None
    if path.suffix.lower() == ".json":
        try:
            texts = json.loads(content) if content.strip() else []
        except json.JSONDecodeError as err:
            raise UserError(f"{path.name} is not valid JSON ({err})") from None
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise UserError(f"{path.name} must hold a JSON list of strings")
        texts = [t for t in texts if t.strip()]
    else:
        texts = [line for line in content.splitlines() if line.strip()]
    if not texts:
        raise UserError(f"{path.name} holds no text to score: put one text per line")
    return texts


def score_command(args) -> dict:
    texts = read_texts(Path(args.input))
    sampler = Sampler(top_k=args.top_k, temperature=args.temperature)
    lm = resolve_model(args.model, device=args.device)
    results = score_texts(lm, texts, sampler=sampler, batch_size=args.batch_size)
    decode = lm.tokenizer.decode
    return {
        "model": lm.name,
        "sampler": sampler,
        "texts": [
            {
                "text": s.text,
                "n_tokens": s.n_scored,
                "total_logprob": s.total_logprob,
                "perplexity": s.perplexity,
                "tokens": [decode([t]) for t in s.token_ids[s.first_scored:].tolist()],
                "logprobs": s.logprobs,
            }
            for s in results
        ],
    }
