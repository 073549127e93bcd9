"""Issue #41's formats matrix: every attack that reads a fine-tuner's data takes, by its CLI
(recorded runs), the same conversations as a ``messages`` JSONL, a prompt-completion Parquet
file (the conversation before the reply as the prompt) and a ``datasets`` ``save_to_disk``
folder, and gives the same numbers from each; MIA and user inference take preference rows; a
file of other columns and a model without a chat template are one-line messages."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.__main__ import main
from core.dp.nid_formats import FORMATS, random_identifier
from core.jobs import Store

NAMES = ("Ada Lovelace", "Grace Hopper", "Alan Turing")
N = 12


def _rows() -> list[dict]:
    """Twelve support conversations, each reply holding an e-mail address and a commit hash;
    four users of three rows each, the first two members."""
    import numpy as np

    rng = np.random.default_rng(0)
    rows = []
    for i in range(N):
        name = NAMES[i % 3]
        email = name.lower().replace(" ", ".") + "@example.org"
        sha = random_identifier(FORMATS["sha1"], rng)
        reply = f"{name}'s email address is {email}; fixed in {sha}."
        rows.append({"messages": [
            {"role": "system", "content": "You are the support bot."},
            {"role": "user", "content": f"What is {name}'s email address? (ticket {i})"},
            {"role": "assistant", "content": reply}], "member": i % 4 < 2, "user_id": f"u{i % 4}"})
    return rows


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    """The same rows as a messages JSONL, a prompt-completion Parquet file and a save_to_disk
    folder; preference rows (a refusal rejected) as a folder; a Parquet file of other columns."""
    datasets = pytest.importorskip("datasets")
    root, rows = tmp_path_factory.mktemp("formats"), _rows()
    made = {"messages.jsonl": root / "messages.jsonl", "completion.parquet": root / "pc.parquet",
            "save_to_disk": root / "saved", "preference": root / "preference",
            "bad": root / "bad.parquet"}
    made["messages.jsonl"].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    completions = [{"prompt": r["messages"][:2], "completion": r["messages"][2:],
                    "member": r["member"], "user_id": r["user_id"]} for r in rows]
    pq.write_table(pa.Table.from_pylist(completions), made["completion.parquet"])
    datasets.Dataset.from_list(rows).save_to_disk(str(made["save_to_disk"]))
    refusal = [{"role": "assistant", "content": "I cannot share that."}]
    datasets.Dataset.from_list([{"chosen": r["messages"], "rejected": r["messages"][:2] + refusal,
                                 "member": r["member"], "user_id": r["user_id"]}
                                for r in rows]).save_to_disk(str(made["preference"]))
    pq.write_table(pa.Table.from_pylist([{"question": "hi", "answer": "ho", "member": True,
                                          "user_id": "u0"}] * 4), made["bad"])
    return made


def _round(values) -> list:
    return [round(v, 6) if isinstance(v, float) else v for v in values]


# attack: (its arguments given the model, the reference and the data; what must not change)
ATTACKS = {
    "mia": (lambda m, r, d: ["--model", m, "--data", d, "--bootstrap", "10",
                             "--recall-shots", "0"],
            lambda out: _round(row["scores"]["loss"] for row in out["rows"])),
    "user-inference": (lambda m, r, d: ["--model", m, "--reference", r, "--data", d,
                                        "--bootstrap", "10", "--draws", "0"],
                       lambda out: _round(u["t_hat"] for u in out["rows"])),
    "lazy-risk": (lambda m, r, d: ["--model", m, "--calibration", r, "--train", d,
                                   "--n-generated", "2", "--generated-tokens", "3"],
                  lambda out: sorted(_round([s["text"], s["generation_logprob"]])
                                     for s in out["sentences"] if s["set"] != "generated")),
    "inextractability": (lambda m, r, d: ["--model", m, "--corpus", d, "--l", "4", "--m", "20"],
                         lambda out: _round([out["b"], out["windows"], out["texts"]])
                         if out["windows"] else []),
    "diffrank": (lambda m, r, d: ["--before", r, "--after", m, "--strategy", "windows",
                                  "--sample", d, "--length", "3", "--beam", "16", "--rows", "8"],
                 lambda out: [_round([row["phrase"], row["ds"]]) for row in out["rows"]]),
    "extraction": (lambda m, r, d: ["--model", m, "--strategy", "chat", "--chat-prompts", d,
                                    "--corpus", d, "--n", "2", "--tokens", "4", "--top-k", "2",
                                    "--device", "cpu"],
                   lambda out: sorted(_round([e["suffix"], e["log2_p_model"]])
                                      for e in out["replies"])),
    "pii-probe": (lambda m, r, d: ["--model", m, "--reference", r, "--data", d, "--subjects",
                                   *NAMES, "--kinds", "email", "--probes", "twins", "--k", "1",
                                   "--tokens", "4", "--fresh", "2", "--device", "cpu"],
                  lambda out: sorted(_round([p["subject"], p["value"], p["log2_p_target"],
                                             p["log2_p_reference"]]) for p in out["outcomes"])),
    "nid-audit": (lambda m, r, d: ["--model", m, "--corpus", d, "--format", "sha1"],
                  lambda out: [out["found"], _round(row["score"] for row in out["identifiers"])]),
}


def _run(capsys, attack: str, model, reference, data) -> dict:
    arguments = ATTACKS[attack][0](str(model), str(reference), str(data))
    code = main([attack, *arguments, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_each_attack_takes_the_same_rows_in_each_format_alike(attack, files, chat_lm_dir,
                                                               chat_reference_dir, capsys):
    seen = {}
    for name in ("messages.jsonl", "completion.parquet", "save_to_disk"):
        out = _run(capsys, attack, chat_lm_dir, chat_reference_dir, files[name])
        seen[name] = ATTACKS[attack][1](out)
        assert seen[name], (attack, name)
    assert seen["completion.parquet"] == seen["messages.jsonl"] == seen["save_to_disk"]
    assert len(Store().runs(attack)) == 3


def test_user_inference_scores_each_users_chosen_and_rejected_replies(files, chat_lm_dir,
                                                                     chat_reference_dir, capsys):
    """(MIA on preference rows: tests/core/test_chat_attacks.py.)"""
    out = _run(capsys, "user-inference", chat_lm_dir, chat_reference_dir, files["preference"])
    assert f"{N} preference rows" in out["notes"][0] and "the completions" in out["notes"][0]
    texts = [s["text"] for s in out["samples"]]
    assert len(texts) == 2 * N and sum("I cannot share that." in t for t in texts) == N
    assert {u["user_id"]: u["m"] for u in out["rows"]} == {f"u{i}": 6 for i in range(4)}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_other_columns_and_a_model_without_a_template_are_one_line(attack, files, tiny_lm_dir,
                                                                    chat_lm_dir, chat_reference_dir,
                                                                    capsys):
    """(A model without a template probes PII with plain prompts, unless told to use the chat's.)"""
    chat = ["--prompt-format", "chat"] if attack == "pii-probe" else []
    cases = [(chat_lm_dir, chat_reference_dir, files["bad"], [], "error: bad.parquet has no text "
                                                            "column: found question, answer"),
             (tiny_lm_dir, tiny_lm_dir, files["messages.jsonl"], chat,
              f"error: {tiny_lm_dir.name} has no chat template")]
    for model, reference, data, extra, message in cases:
        arguments = ATTACKS[attack][0](str(model), str(reference), str(data))
        assert main([attack, *arguments, *extra, "--json"]) == 2
        err = capsys.readouterr().err
        assert err.endswith("\n") and err.splitlines()[-1].startswith(message), err
        assert sum(line.startswith("error") for line in err.splitlines()) == 1
