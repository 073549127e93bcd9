"""`python -m core models load SOURCE ...` and `python -m core models list`."""

from __future__ import annotations

from core.models.loaders import BUILTIN_SOURCES, demo_path, smollm2_path
from core.models.registry import DEVICES, DTYPES, load_model, loaded_models
from core.errors import UserError


def register(sub) -> None:
    models = sub.add_parser("models", help="load language models and show their cards")
    commands = models.add_subparsers(dest="models_command", required=True)
    load = commands.add_parser("load", help="load a model and print its card")
    load.add_argument("source", help=f"a folder, a .zip, a .gguf, a hub id, or one of {', '.join(BUILTIN_SOURCES)}")
    load.add_argument("--name", default=None, help="short name to register it under")
    load.add_argument("--device", choices=DEVICES, default="auto")
    load.add_argument("--dtype", choices=list(DTYPES), default="auto")
    load.set_defaults(func=load_command)
    listing = commands.add_parser("list", help="built-in sources (and whether they are ready)")
    listing.set_defaults(func=list_command)


def load_command(args) -> dict:
    lm = load_model(args.source, name=args.name, device=args.device, dtype=args.dtype)
    return {"name": lm.name, "source": lm.source, "card": lm.card}


def builtin_status(source: str) -> dict:
    """Whether a built-in source can be loaded now, and where it is or how to get it."""
    try:
        where = smollm2_path() if source == "smollm2" else demo_path(source)
    except UserError as err:
        return {"source": source, "available": False, "detail": str(err)}
    return {"source": source, "available": True, "detail": str(where)}


def list_command(args) -> dict:
    return {
        "builtin": [builtin_status(source) for source in BUILTIN_SOURCES],
        "loaded": [{"name": lm.name, "source": lm.source, "card": lm.card} for lm in loaded_models()],
    }
