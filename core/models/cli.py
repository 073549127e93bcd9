"""`python -m core models load SOURCE ...`, `python -m core models list` and
`python -m core score --model M --input FILE ...` (per-token log-probabilities of texts)."""

from __future__ import annotations

from core import sources
from core.data import FORMATS_HELP, read_texts
from core.errors import UserError
from core.models.loaders import BUILTIN_SOURCES, SMOLLM2, smollm2_path
from core.models.registry import DEVICES, DTYPES, load_model, loaded_models, resolve_model
from core.scoring import Sampler, score_texts


def register(sub) -> None:
    models = sub.add_parser("models", help="load language models and show their cards")
    commands = models.add_subparsers(dest="models_command", required=True)
    load = commands.add_parser("load", help="load a model and print its card")
    load.add_argument("source", help="a folder, a .zip, a .gguf, a hub id, or one of "
                                     + ", ".join(BUILTIN_SOURCES))
    load.add_argument("--name", default=None, help="short name to register it under")
    load.add_argument("--device", choices=DEVICES, default="auto")
    load.add_argument("--dtype", choices=list(DTYPES), default="auto")
    load.set_defaults(func=load_command)
    listing = commands.add_parser("list", help="built-in sources (and whether they are ready)")
    listing.set_defaults(func=list_command)

    score = sub.add_parser("score", help="per-token log-probabilities of texts under a model")
    score.add_argument("--model", required=True, help="a model source (folder, .zip, .gguf, "
                                                      "a built-in, ...)")
    score.add_argument("--input", required=True, help=FORMATS_HELP)
    score.add_argument("--top-k", type=int, default=None, help="score under a top-k sampler")
    score.add_argument("--temperature", type=float, default=1.0,
                       help="score under this sampling temperature")
    score.add_argument("--device", choices=DEVICES, default="auto")
    score.add_argument("--batch-size", type=int, default=None)
    score.set_defaults(func=score_command)


def load_command(args) -> dict:
    lm = load_model(args.source, name=args.name, device=args.device, dtype=args.dtype)
    return {"name": lm.name, "source": lm.source, "card": lm.card}


def builtin_status(source: str) -> dict:
    """Whether a built-in source can be loaded now, and where it is or how to get it."""
    try:
        where = smollm2_path() if source == SMOLLM2 else sources.model_path(source)
    except UserError as err:
        return {"source": source, "available": False, "detail": str(err)}
    return {"source": source, "available": True, "detail": str(where)}


def list_command(args) -> dict:
    return {
        "builtin": [builtin_status(source) for source in BUILTIN_SOURCES],
        "loaded": [{"name": lm.name, "source": lm.source, "card": lm.card} for lm in loaded_models()],
    }


def score_command(args) -> dict:
    """Per-token log-probabilities of the texts of ``--input`` (``core.data.read_texts``)."""
    texts = read_texts(args.input)
    sampler = Sampler(top_k=args.top_k, temperature=args.temperature)
    lm = resolve_model(args.model, device=args.device)
    results = score_texts(lm, texts, sampler=sampler, batch_size=args.batch_size)
    decode = lm.tokenizer.decode
    return {
        "model": lm.name,
        "sampler": sampler,
        "texts": [{"text": s.text, "n_tokens": s.n_scored, "total_logprob": s.total_logprob,
                   "perplexity": s.perplexity,
                   "tokens": [decode([t]) for t in s.token_ids[s.first_scored:].tolist()],
                   "logprobs": s.logprobs} for s in results],
    }
