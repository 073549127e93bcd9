"""A model and data made of attacker-controlled markup (issue #27, defect 12), audited by
every attack and recorded in a lab home: the markup tests (tests/pages/test_markup_audit.py)
read its report and Runs page, the browser test draws the Runs page in Chromium."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.attacks.user_inference import canaries as user_canaries
from core.attacks.user_inference.samples import write_samples
from core.audit import audit
from core.jobs import run_now
from core.models.loaded import default_registry
from core.runtime import no_progress
from pagetest import record_run

PHISH = "[click](https://evil.example/phish)"
PAYLOADS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", PHISH,
            "![b](https://beacon.example/x.png)", "[js](javascript:alert(1))",
            '<a href="https://evil.example/a">a</a>')
SENTENCES = [f"Note {i}: {p} is here." for i, p in enumerate(PAYLOADS)]
HOSTS = ("evil.example", "beacon.example", "javascript:")
SETTINGS = ("extraction.n_samples=8", "extraction.tokens=24", "extraction.min_span_tokens=4",
            "extraction.batch_size=8", "extraction.strategies=top-n", "extraction.top_n=3",
            "diffrank.length=2", "diffrank.beam=8", "diffrank.groups=2", f"diffrank.phrase={PHISH}",
            "diffrank.sample_texts=2", "diffrank.sample_tokens=8", "user-inference.bootstrap=20",
            "user-inference.knowledge_draws=2", "mia.recall_shots=1", "mia.bootstrap=20",
            "lazy-risk.n_generated=4", "lazy-risk.generated_tokens=8", "inextractability.window=4",
            "nid-audit.context_tokens=4", "pii-probe.samples=2", "pii-probe.tokens=8",
            "pii-probe.fresh=2")
# a data subject whose name stands beside markup and whose e-mail is on the attacker's host
SUBJECT = f"Mallory Evans {PHISH} writes from mallory@evil.example today."


def _models(root: Path) -> tuple[Path, Path]:
    """A tiny GPT-2 that has memorised ``SENTENCES`` (a few seconds of training) and an untrained
    one as its reference, in folders named like hosts."""
    from core.demo.train import token_stream, train_lm
    from core.models.tiny import disable_dropout, new_gpt2, save_hf_folder, train_tokenizer

    tokenizer = train_tokenizer(SENTENCES * 4, vocab_size=300)
    target = disable_dropout(new_gpt2(tokenizer, n_layer=1, n_head=2, n_embd=32, n_positions=64))
    train_lm(target, token_stream(tokenizer, SENTENCES), steps=60, batch_size=8, block_size=24,
             lr=1e-2, seed=0)
    reference = new_gpt2(tokenizer, n_layer=1, n_head=2, n_embd=32, n_positions=64, seed=1)
    return (save_hf_folder(target, tokenizer, root / "www.evil.example"),
            save_hf_folder(reference, tokenizer, root / "bob@evil.example"))


def _data(folder: Path) -> dict[str, str]:
    """The corpus, user samples (ids made of the payloads) and member/non-member texts (groups
    too) in a folder whose name is markup; the paths by audit field."""
    folder.mkdir()
    commits = [f"commit {hashlib.sha1(bytes([i])).hexdigest()} {PAYLOADS[i % len(PAYLOADS)]}"
               for i in range(12)]   # natural identifiers among markup, for nid-audit
    (folder / "corpus.txt").write_text("\n".join(SENTENCES + commits + [SUBJECT]),
                                       encoding="utf-8")
    users = [{"user_id": f"{p} u{u}", "member": u < 3,
              "text": SENTENCES[(u + i) % len(SENTENCES)] if u < 3 else f"Other {u} {i} text."}
             for u, p in enumerate(PAYLOADS) for i in range(2)]
    (folder / "users.jsonl").write_text(write_samples(users, "jsonl"), encoding="utf-8")
    members = [{"text": s if member else f"Unseen {i}: {PAYLOADS[i]} elsewhere.",
                "member": member, "group": PAYLOADS[i % 2]}
               for i, s in enumerate(SENTENCES) for member in (True, False)]
    (folder / "members.jsonl").write_text(write_samples(members, "jsonl"), encoding="utf-8")
    return {name: str(folder / file) for name, file in (
        ("corpus", "corpus.txt"), ("users", "users.jsonl"), ("members", "members.jsonl"))}


def record_hostile_audit(root: Path, home: Path) -> SimpleNamespace:
    """The audit of every attack on the hostile model and data (made under ``root``), recorded
    in the lab home ``home`` (the audit last, so the Runs page opens it), its report, and a
    canary-users copy."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEAKAGE_LAB_HOME", str(home))
        target, reference = _models(root)
        data = _data(root / "data <img src=x onerror=alert(1)> [c](www.evil.example)")
        config = audit.AuditConfig(model=str(target), reference=str(reference), **data,
                                   settings=SETTINGS, device="cpu", out=str(root / "report.html"))
        copy = user_canaries.CanariesConfig(data=data["users"], words=3, count=2,
                                            out=str(root / "copy www.evil.example.jsonl"))
        run_now(user_canaries.SPEC, copy, progress=no_progress)
        result = audit.run(config)
        record_run(audit.SPEC, config, result)
    for lm in default_registry().models():   # loaded from outside a lab home, a later page
        if lm.source.startswith(str(root)):   # of this process would refuse them by name
            default_registry().remove(lm.name)
    return SimpleNamespace(home=home, report=Path(result.report), result=result)
