"""The ``audit``, ``audit-lora`` and ``audit-series`` sections of ``figures.demo_figures``: the
issue's audit command on the demo, timed, and what its report says of the planted secret, the
canary phrases and the users; the same of a LoRA adapter, and of its checkpoints as a series."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path


def measure_audit() -> dict:
    from core.audit.audit import AuditConfig, SPEC
    from core.demo import scenario
    from core.jobs import run_now
    from core.runtime import no_progress

    manifest = scenario.load_manifest()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report.html"
        config = AuditConfig(model="demo:updated", reference="demo:base",
                             corpus="demo:private_train", users="demo:user_samples", out=str(out))
        started = time.perf_counter()
        result = run_now(SPEC, config, progress=no_progress)  # recorded, its parts under it
        seconds = time.perf_counter() - started
        report = out.read_text(encoding="utf-8")
    verdicts = {e.attack: e.verdict for e in result.entries}
    phrases = [c.phrase for c in manifest.canaries]
    top_ten = verdicts["diffrank"].split("the first ten: ", 1)[-1]
    return {"seconds": round(seconds), "attacks": list(verdicts),
            "secret_in_extraction_verdict": manifest.secret.digits in verdicts["extraction"],
            "canary_words_in_diffrank_top_ten": sorted({w for p in phrases for w in p.split()
                                                        if len(w) > 4 and w in top_ten}),
            "verdicts": verdicts, "report_bytes": len(report.encode())}


def markdown_audit(f: dict) -> str:
    verdicts = "\n".join(f"  - {name}: {text}" for name, text in f["verdicts"].items())
    return (f"On the demo, the command below ran {', '.join(f['attacks'])} in {f['seconds']} s "
            f"on the 2-core CPU and wrote a {f['report_bytes'] / 2**20:.1f} MB report. Its "
            f"verdicts:\n{verdicts}\n")


LORA = dict(rank=16, steps=800, lr=5e-3, layers=("c_attn", "c_proj", "c_fc", "wte", "lm_head"))


def train_demo_adapter(folder: Path, checkpoints: tuple[int, ...] = ()) -> Path:
    """A LoRA adapter (rank 16) fine-tuned from demo:base the way demo:updated was (800 steps on
    the same stream: the private text and its public mix, 256-token blocks), saved as
    safetensors with the base's folder recorded: what a user brings to audit. Its layers
    include the (tied) token embeddings and output layer: the base never saw a digit, and an
    adapter of the other layers alone learned that digits follow "number is" but not which
    (about -4.5 nats each); fine-tunes that teach new tokens adapt these layers too. With
    ``checkpoints``, saved instead after each of those steps, in ``folder/checkpoint-N`` (as
    the Hugging Face Trainer names them)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from core.demo import scenario, train
    from core.demo.config import DemoConfig
    from core.demo.paths import model_dir
    from core.models.loaders import load_source

    demo = DemoConfig()
    model, tokenizer, _ = load_source(str(model_dir("base")), dtype=torch.float32)
    split = scenario.make_split(demo)
    private, mix = scenario.update_stream(tokenizer, [r["text"] for r in split.private_train],
                                          split.public_train, ratio=demo.update_public_ratio,
                                          seed=demo.seed)
    model = get_peft_model(model, LoraConfig(  # fan_in_fan_out: GPT-2's Conv1D (PEFT fixes it per layer)
        r=LORA["rank"], lora_alpha=2 * LORA["rank"], lora_dropout=0.0,
        target_modules=list(LORA["layers"]), fan_in_fan_out=True))

    def save(step: int, loss: float) -> None:
        if step in checkpoints:
            model.save_pretrained(folder / f"checkpoint-{step}", safe_serialization=True)

    train.train_lm(model, torch.cat([private, mix]), steps=LORA["steps"], lr=LORA["lr"],
                   seed=demo.seed + 1, batch_size=demo.batch_size, block_size=demo.n_positions,
                   on_step=save)
    if not checkpoints:
        model.save_pretrained(folder, safe_serialization=True)
    return folder


def measure_audit_lora() -> dict:
    """Train the adapter, then audit it (extraction, differential rank) with its base as the
    reference."""
    from core import paths
    from core.audit.audit import AuditConfig, SPEC
    from core.demo import scenario
    from core.jobs import run_now
    from core.runtime import no_progress

    manifest = scenario.load_manifest()
    started = time.perf_counter()
    adapter = train_demo_adapter(paths.home() / "demo-lora-adapter")
    trained = time.perf_counter() - started
    config = AuditConfig(model=str(adapter), reference="demo:base", corpus="demo:private_train",
                         attacks=("extraction", "diffrank"))
    result = run_now(SPEC, config, progress=no_progress)  # recorded, its parts under it
    verdicts = {e.attack: e.verdict for e in result.entries}
    return {"lora": LORA, "training_seconds": round(trained), "audit_seconds": round(result.seconds),
            "secret_in_extraction_verdict": manifest.secret.digits in verdicts["extraction"],
            "verdicts": verdicts}


def markdown_audit_lora(f: dict) -> str:
    lora = f["lora"]
    found = "names the planted secret" if f["secret_in_extraction_verdict"] else \
        "does not name the planted secret"
    return (f"A LoRA adapter (rank {lora['rank']} on {', '.join(lora['layers'])}; "
            f"{lora['steps']} steps at lr {lora['lr']:g}) fine-tuned from demo:base on the stream "
            f"demo:updated was trained on ({f['training_seconds']} s), "
            f"audited as a folder with demo:base as its reference ({f['audit_seconds']} s): the "
            f"extraction verdict {found}: “{f['verdicts']['extraction']}”\n")


SERIES_STEPS = (200, 400, 800)   # the adapter's checkpoints (LORA["steps"] in all)


def measure_audit_series() -> dict:
    """Train the adapter, saving it at ``SERIES_STEPS``, then audit the folder of checkpoints as
    one series (extraction, differential rank) with demo:base as the reference: per step, the
    memorised candidates and whether the extraction verdict names the planted secret."""
    from core import paths
    from core.audit.series import SPEC, SeriesConfig
    from core.demo import scenario
    from core.jobs import run_now
    from core.runtime import no_progress

    secret = scenario.load_manifest().secret.digits
    started = time.perf_counter()
    folder = train_demo_adapter(paths.home() / "demo-lora-checkpoints", checkpoints=SERIES_STEPS)
    trained = time.perf_counter() - started
    config = SeriesConfig(checkpoints=(str(folder),), reference="demo:base",
                          corpus="demo:private_train", attacks=("extraction", "diffrank"))
    result = run_now(SPEC, config, progress=no_progress)  # recorded, its parts under it
    return {"lora": LORA, "training_seconds": round(trained),
            "series_seconds": round(result.seconds),
            "points": [[p.step, p.headline.get("extraction", {}).get("memorized"),
                        secret in p.verdicts.get("extraction", "")] for p in result.points]}


def markdown_audit_series(f: dict) -> str:
    lora = f["lora"]
    steps = "; ".join(f"step {step}: {memorised} memorised candidates, the secret "
                      f"{'named' if named else 'not named'}" for step, memorised, named in f["points"])
    return (f"The same LoRA adapter (rank {lora['rank']}, lr {lora['lr']:g}) saved at steps "
            f"{', '.join(str(p[0]) for p in f['points'])} of its {lora['steps']} "
            f"({f['training_seconds']} s), its folder of checkpoints audited as one series "
            f"(extraction and differential rank, demo:base as the reference; "
            f"{f['series_seconds']} s): {steps}.\n")
