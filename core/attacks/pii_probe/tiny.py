"""The PII probe's tiny config: two untrained GPT-2s and three rows naming two subjects."""

from __future__ import annotations

import json

from core import paths
from core.attacks.pii_probe.config import PiiProbeConfig
from core.models.tiny import tiny_random_models

TINY_ROWS = (
    "Jane Roe can be reached at jane.roe@example.org or +1 415-555-0134.",
    "Please send the invoice to Jane Roe at jane.roe@example.org today.",
    "John Doe paid with the card 4111 1111 1111 1111 last week.",
)


def tiny_config() -> PiiProbeConfig:
    target, reference = tiny_random_models(list(TINY_ROWS) * 4, (
        "tiny-pii-target", "tiny-pii-reference"), vocab_size=280, n_positions=128)
    data = paths.cache_home() / "tiny" / "pii-rows.jsonl"
    data.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps({"text": row}) for row in TINY_ROWS)
    if not data.is_file() or data.read_text(encoding="utf-8") != text:
        data.write_text(text, encoding="utf-8")
    return PiiProbeConfig(model=target, reference=reference, data=str(data), samples=2,
                          tokens=8, fresh=3, batch_size=8, device="cpu")
