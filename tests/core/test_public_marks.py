"""Public versus private (core.calibration.public): a row is public when the public sample
holds it verbatim (case and spacing aside) or holds half its word 5-grams; every discovery
attack's recorded CLI run marks its rows and lists the public ones below, or hides them."""

import json
import random

import pytest

from core.__main__ import main
from core.calibration.public import PublicSample, normalised
from core.jobs import Store
from core.registry import get_spec
from core.serialize import from_jsonable

SAMPLE = ["The build uses CMake and Ninja on every platform we ship.",
          "Set the BUILD_TYPE variable to Release before you configure the tree."]


def test_a_row_is_public_verbatim_or_by_half_its_ngrams_case_and_spacing_aside():
    sample = PublicSample(SAMPLE, "public.txt")
    verbatim = sample.mark("uses  CMAKE and\nninja")
    assert verbatim.public and verbatim.verbatim
    assert not sample.mark("platform we ship. Set the").verbatim   # across two documents
    shared = sample.mark("set the build_type variable to release before it is 4921")
    assert shared.public and not shared.verbatim and shared.overlap == pytest.approx(3 / 6)
    private = sample.mark("my secret password is violet walrus and nobody knows it")
    assert not private.public and (private.verbatim, private.overlap) == (False, 0.0)
    assert not sample.mark("").public


def test_verbatim_agrees_with_a_plain_substring_search_on_random_rows():
    """The n-gram pruning never misses a verbatim row: cut words at both ends included."""
    rng = random.Random(0)
    words = " ".join(SAMPLE).split() + ["secret", "4921"]
    sample = PublicSample(SAMPLE)
    for _ in range(2000):
        if rng.random() < 0.5:
            document = normalised(rng.choice(SAMPLE))
            start = rng.randrange(len(document))
            row = document[start:start + rng.randrange(1, 60)]
        else:
            row = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 12)))
        expected = bool(normalised(row)) and any(normalised(row) in normalised(d) for d in SAMPLE)
        assert sample.mark(row).verbatim == expected, row


# attack -> (extra flags, the rows its JSON lists in order, a row's text)
def _diffrank_rows(out):
    return out["rows"]


def _lazy_rows(out):
    return [s for s in out["sentences"] if s["set"] == "train"]


def _extraction_rows(out):
    by_id = {c["id"]: c for c in out["candidates"]}
    return [by_id[i] for i in out["rankings"]["top-n"]["zlib"]]


ATTACKS = {"diffrank": (_diffrank_rows, "phrase"), "lazy-risk": (_lazy_rows, "text"),
           "inextractability": (lambda out: out["records"], "text"),
           "extraction": (_extraction_rows, "text")}


def _run(capsys, attack, *flags):
    assert main([attack, "--tiny", "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("attack", ATTACKS)
def test_each_discovery_attack_marks_its_rows_and_lists_the_public_ones_below(
        attack, capsys, tmp_path):
    rows_of, key = ATTACKS[attack]
    plain = rows_of(_run(capsys, attack))
    assert all(row["public"] is None for row in plain)   # no public sample: no mark
    top = plain[0][key]
    public = tmp_path / "public.txt"
    public.write_text(f"Some public text, and then {top.upper()} as the domain writes it.\n",
                      encoding="utf-8")
    out = _run(capsys, attack, "--public-sample", str(public))
    rows = rows_of(out)
    marks = [row["public"]["public"] for row in rows]
    assert marks == sorted(marks) and marks[-1]   # private rows first, then the public ones
    if attack == "lazy-risk":   # numbered as listed, so a tracked rank is where a reader meets it
        assert [row["rank"] for row in rows] == list(range(1, len(rows) + 1))
    assert any(row[key] == top and row["public"]["verbatim"] for row in rows)
    assert any(f"occur in the public sample {public.name} (listed below" in note
               for note in out["notes"])
    assert "<th>public sample</th>" in _report_section(attack, out)
    hidden = rows_of(_run(capsys, attack, "--public-sample", str(public),
                          "--public-rows", "hidden"))
    assert hidden == [row for row in rows if not row["public"]["public"]]
    recorded = Store().runs(attack)[0]
    assert recorded.params["public_rows"] == "hidden" and recorded.result["notes"]


def _report_section(attack: str, out: dict) -> str:
    """The audit report's section of a recorded run (extraction's lists memorised passages: its
    top candidate is taken as one)."""
    spec = get_spec(attack)
    result = from_jsonable(spec.result_type, out)
    if attack == "extraction":
        top = next(c for c in result.candidates if c.public is not None)
        top.memorized, top.span, top.span_tokens = True, top.text, top.n_tokens
    section = spec.audit.section(result)
    assert "public (verbatim)" in section or "private" in section
    return section
