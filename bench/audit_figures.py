"""The ``audit`` section of ``bench.demo_figures``: the issue's audit command on the demo, timed,
and what its report says of the planted secret, the canary phrases and the users."""

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
        result = run_now(SPEC, config, record=False, progress=no_progress)
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


LORA = dict(rank=16, steps=800, lr=5e-3, batch_size=8, max_tokens=128)


def train_demo_adapter(folder: Path) -> Path:
    """A LoRA adapter (rank 16) fine-tuned from demo:base on the demo's private training text,
    saved as safetensors with the base's folder recorded: what a user brings to audit."""
    import torch

    from core.attacks.domain_reference import with_lora
    from core.attacks.domain_training import fine_tune
    from core.data import read_texts
    from core.demo.paths import model_dir
    from core.models.loaders import load_source

    model, tokenizer, _ = load_source(str(model_dir("base")), dtype=torch.float32)
    model = with_lora(model, LORA["rank"])
    fine_tune(model, tokenizer, read_texts("demo:private_train"), steps=LORA["steps"],
              lr=LORA["lr"], batch_size=LORA["batch_size"], max_tokens=LORA["max_tokens"], seed=0)
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
    result = run_now(SPEC, config, record=False, progress=no_progress)
    verdicts = {e.attack: e.verdict for e in result.entries}
    return {"lora": LORA, "training_seconds": round(trained), "audit_seconds": round(result.seconds),
            "secret_in_extraction_verdict": manifest.secret.digits in verdicts["extraction"],
            "verdicts": verdicts}


def markdown_audit_lora(f: dict) -> str:
    lora = f["lora"]
    found = "names the planted secret" if f["secret_in_extraction_verdict"] else \
        "does not name the planted secret"
    return (f"A LoRA adapter (rank {lora['rank']}, {lora['steps']} steps at lr {lora['lr']:g}) "
            f"fine-tuned from demo:base on the demo's private text ({f['training_seconds']} s), "
            f"audited as a folder with demo:base as its reference ({f['audit_seconds']} s): the "
            f"extraction verdict {found}: “{f['verdicts']['extraction']}”\n")
