"""The natural-identifier audit over a fine-tuner's rows (issue #41): identifiers are searched in
the tokens training learnt from only (the assistant's turns; ``--mask all``: every token), and
each is scored after its conversation up to it, rendered with the model's chat template, as plain
transformers + ``apply_chat_template`` scores it; a recorded CLI run on a tiny chat model."""

import json

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from core.__main__ import main
from core.dp.nid_formats import FORMATS, random_identifier
from core.dp.costs import nid_audit
from core.dp.nid_audit import NidAuditConfig
from core.jobs import Store, load_config

N = 12


def _hashes(seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [random_identifier(FORMATS["sha1"], rng) for _ in range(N)]


TRAINED, ASKED = _hashes(0), _hashes(1)   # in the assistant's replies; in the users' questions


def _conversation(i: int) -> list[dict]:
    return [{"role": "system", "content": "You are the release bot."},
            {"role": "user", "content": f"Was fix {i} in {ASKED[i]}?"},
            {"role": "assistant", "content": f"No: fix {i} landed in commit {TRAINED[i]}."}]


def _nid(capsys, folder, corpus: list, *extra) -> dict:
    assert main(["nid-audit", "--model", str(folder), "--corpus", *map(str, corpus),
                 "--format", "sha1", *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _transformers_logp(folder, turns: list[dict], value: str) -> float:
    """log p of ``value``'s tokens after the conversation before it: ``apply_chat_template``'s
    ids, a forward pass in float64; the value's tokens found by decoding prefixes."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    ids = tokenizer.apply_chat_template(turns, tokenize=True, return_dict=True)["input_ids"]
    text = tokenizer.decode(ids)
    start = text.index(value)
    lengths = [len(tokenizer.decode(ids[:k])) for k in range(len(ids) + 1)]
    first = next(k for k in range(len(ids)) if lengths[k + 1] > start)
    end = next(k for k in range(len(ids) + 1) if lengths[k] >= start + len(value))
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids[:end]])).logits[0].double(), -1)
    return float(sum(logp[k - 1, ids[k]] for k in range(first, end)))


def test_identifiers_of_conversations_are_searched_in_the_replies_and_scored_in_context(
        chat_lm_dir, tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"messages": _conversation(i)}) + "\n"
                            for i in range(N)), encoding="utf-8")
    out = _nid(capsys, chat_lm_dir, [data])
    members = [row for row in out["identifiers"] if row["member"]]
    assert [row["value"] for row in members] == TRAINED and out["found"]["sha1"] == N
    assert any(f"{N} messages rows" in n and "scored on the assistant's turns" in n
               and "searched in the trained tokens only" in n
               for n in out["notes"]), out["notes"]
    for i in (0, 7):
        expected = _transformers_logp(chat_lm_dir, _conversation(i), TRAINED[i])
        assert members[i]["logp_target"] == pytest.approx(expected, abs=1e-4)
    fresh = out["identifiers"][N]
    assert not fresh["member"] and fresh["value"] not in TRAINED + ASKED
    swapped = _conversation(0)
    swapped[2]["content"] = swapped[2]["content"].replace(TRAINED[0], fresh["value"])
    assert fresh["logp_target"] == pytest.approx(
        _transformers_logp(chat_lm_dir, swapped, fresh["value"]), abs=1e-4)

    notes = tmp_path / "notes.txt"   # plain texts beside the rows: scored as before
    notes.write_text("".join(f"Deployed {sha} today.\n" for sha in _hashes(2)[:3]))
    both = _nid(capsys, chat_lm_dir, [data, notes])
    assert both["found"]["sha1"] == N + 3 and both["texts"] == N + 3
    assert both["identifiers"][:N] == out["identifiers"][:N]

    everything = _nid(capsys, chat_lm_dir, [data], "--mask", "all")
    assert everything["found"]["sha1"] == 2 * N   # the questions' hashes too
    latest, _, first = Store().runs("nid-audit")
    assert (load_config(latest).mask, load_config(first).mask) == ("all", "auto")
    assert first.result["identifiers"] == out["identifiers"]


def test_the_estimate_prices_a_row_up_to_its_identifier(chat_lm_dir, tmp_path, capsys):
    """A conversation's identifier is scored after its row, not after --context-tokens: the
    dry run counts the longer context and says so."""
    data = tmp_path / "train.jsonl"
    long = [[*turns[:2], {"role": "assistant", "content": " ".join(["landed"] * 200)
                          + turns[2]["content"]}] for turns in map(_conversation, range(N))]
    data.write_text("".join(json.dumps({"messages": m}) + "\n" for m in long), encoding="utf-8")
    plain = tmp_path / "plain.txt"
    plain.write_text("".join(m[2]["content"] + "\n" for m in long), encoding="utf-8")
    work = {}
    for name, corpus in (("rows", data), ("plain", plain)):
        assert main(["nid-audit", "--model", str(chat_lm_dir), "--corpus", str(corpus),
                     "--format", "sha1", "--context-tokens", "8", "--dry-run", "--json"]) == 0
        work[name] = json.loads(capsys.readouterr().out)
    assert any("scored up to its identifier" in a for a in work["rows"]["assumptions"])
    assert not any("scored up to its identifier" in a for a in work["plain"]["assumptions"])
    scored = [nid_audit(NidAuditConfig(model=str(chat_lm_dir), corpus=(str(corpus),),
                                       context_tokens=8)).works[-1] for corpus in (data, plain)]
    assert scored[0].length > 100 > 8 + 24 >= scored[1].length
