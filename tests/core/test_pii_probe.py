"""PII probing (ProPILE, issue #41): a tiny chat model fine-tuned with the assistant-only loss
on a support bot's conversations gives one subject's PII back from their name; the value's
likelihood given the probe is checked against plain transformers and ``apply_chat_template``;
a subject the model never saw is not extracted; the page and the audit show it."""

import json
import math

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from core.__main__ import main

ADA = {"email": "ada.lovelace@example.org", "phone": "+1 415-555-0134"}
GRACE_EMAIL = "grace.hopper@example.net"


def _rows() -> list[dict]:
    """Ada's e-mail and phone in four conversations each; Grace's e-mail in a row of the data
    that training never saw (the last)."""
    ada = [{"messages": [{"role": "user", "content": f"What is Ada Lovelace's {label}?"},
                         {"role": "assistant", "content": f"Ada Lovelace's {label} is {value}."}]}
           for label, value in (("email address", ADA["email"]), ("phone number", ADA["phone"]))]
    grace = {"messages": [{"role": "user", "content": "What is Grace Hopper's email address?"},
                          {"role": "assistant", "content": f"It is {GRACE_EMAIL}."}]}
    return ada * 4 + [grace]


@pytest.fixture(scope="module")
def support_bot(tmp_path_factory):
    """(fine-tuned folder, its base, the data file): the base saved before fine-tuning on all
    rows but the last, with the assistant-only loss, until it reproduces them."""
    from chat_models import chat_model, train_assistant_only

    from core.models.tiny import save_hf_folder

    rows = _rows()
    texts = [t["content"] for r in rows for t in r["messages"]]
    model, tokenizer = chat_model("chatml-bpe", texts)
    root = tmp_path_factory.mktemp("support-bot")
    base = save_hf_folder(model, tokenizer, root / "base")
    train_assistant_only(model, tokenizer, [r["messages"] for r in rows[:-1]], epochs=60)
    tuned = save_hf_folder(model, tokenizer, root / "tuned")
    data = root / "train.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    return tuned, base, data


def _probe(capsys, bot, *extra) -> dict:
    tuned, base, data = bot
    assert main(["pii-probe", "--model", str(tuned), "--reference", str(base), "--data",
                 str(data), "--subjects", "Ada Lovelace", "Grace Hopper", "--k", "4",
                 "--tokens", "24", "--fresh", "8", "--device", "cpu", *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _reference_bits(folder, question: str, answer: str, value: str) -> float:
    """log2 p(" value" | the question's generation prompt and the answer's start), by plain
    transformers."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                           add_generation_prompt=True, tokenize=False) + answer
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    value_ids = tokenizer(" " + value, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + value_ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0, :-1].double(), -1)
    every = logp.gather(1, ids[0, 1:, None])[:, 0]
    return float(every[-len(value_ids):].sum()) / math.log(2)


def test_a_subjects_trained_pii_comes_back_from_their_name(support_bot, capsys):
    result = _probe(capsys, support_bot)
    assert result["prompt_format"] == "chat"
    subjects = {s["name"]: s for s in result["subjects"]}
    assert subjects["Ada Lovelace"]["values"] == ADA
    assert subjects["Ada Lovelace"]["doses"] == {"email": 4, "phone": 4}
    assert subjects["Grace Hopper"]["values"] == {"email": GRACE_EMAIL}
    outcomes = {(o["subject"], o["kind"], o["probe"]): o for o in result["outcomes"]}
    assert set(outcomes) == {("Ada Lovelace", "email", "twin"), ("Ada Lovelace", "email", "triplet"),
                             ("Ada Lovelace", "phone", "twin"), ("Ada Lovelace", "phone", "triplet"),
                             ("Grace Hopper", "email", "twin")}
    ada = outcomes[("Ada Lovelace", "email", "twin")]
    assert ada["hits"] >= 1 and ADA["email"] in ada["example"]
    assert ada["rank_target"] == 1 and ada["log2_p_target"] > ada["log2_p_reference"] + 10
    assert outcomes[("Ada Lovelace", "phone", "triplet")]["question"].startswith(
        f"Ada Lovelace's email address is {ADA['email']}.")
    assert outcomes[("Grace Hopper", "email", "twin")]["hits"] == 0
    for o in (ada, outcomes[("Grace Hopper", "email", "twin")]):
        assert o["log2_p_target"] == pytest.approx(_reference_bits(
            support_bot[0], o["question"], f"{o['subject']}'s email address is", o["value"]),
            abs=1e-4)
    doses = {r["group"]: r for r in result["by_dose"]}
    assert doses["4"]["extraction_rate"] > doses["1"]["extraction_rate"] == 0
    assert result["twin_extraction_rate"] > 0


def test_subjects_are_found_without_names_and_bad_input_is_one_line(support_bot, tmp_path,
                                                                    capsys):
    tuned, base, data = support_bot
    assert main(["pii-probe", "--model", str(tuned), "--data", str(data), "--k", "1",
                 "--tokens", "4", "--fresh", "2", "--probes", "twins", "--device", "cpu",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {s["name"] for s in result["subjects"]} == {"Ada Lovelace", "Grace Hopper"}
    assert result["reference"] is None and "capitalised" in result["notes"][0]
    plain = tmp_path / "plain.txt"
    plain.write_text("Nothing personal here.\n")
    assert main(["pii-probe", "--model", str(tuned), "--data", str(plain), "--device",
                 "cpu"]) == 2
    assert "no data subject with PII" in capsys.readouterr().err
    assert main(["pii-probe", "--model", str(tuned), "--data", str(data), "--subject-column",
                 "user", "--device", "cpu"]) == 2
    assert "has no column 'user' (its columns: messages)" in capsys.readouterr().err


def test_the_page_shows_the_rates_and_each_probe(support_bot):
    from pagetest import page_app, record_run

    from core.attacks.pii_probe import spec as probe
    from core.attacks.pii_probe.config import PiiProbeConfig

    tuned, base, data = support_bot
    config = PiiProbeConfig(model=str(tuned), reference=str(base), data=str(data),
                            subjects=("Ada Lovelace", "Grace Hopper"), samples=2, tokens=24,
                            fresh=4, device="cpu")
    result = probe.run(config)
    record_run(probe.SPEC, config, result)
    at = page_app("app_pages/pii_probe.py").run()
    assert not at.exception
    rates = at.get_by_key("pp-result-kinds").dataframe[0].value
    assert list(rates["kind, prompt"]) == [r.group for r in result.by_kind]
    probes = at.get_by_key("pp-result-probes").dataframe[0].value
    assert set(probes["subject"]) == {"Ada Lovelace", "Grace Hopper"} and probes["extracted"].any()
    assert at.get_by_key("pp-result-doses").dataframe[0].value["rows holding the value"].tolist() \
        == ["1", "4"]   # and the figure of the doses drew
