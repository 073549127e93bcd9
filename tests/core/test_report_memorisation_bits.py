"""Memorisation in bits in the audit report, built from the stored runs of a recorded audit: the
inextractability section's b and L(p0) (the audit's σ, q, steps), extraction's p_z and b of
its memorised spans and tracked phrase, and the per-token heat map of the highest-scoring
members as coloured spans with a legend (none without a reference)."""

import dataclasses
import html
import re

import pytest

from core.attacks.extraction.views import extractability_rows
from core.attacks.membership import audit_hooks as mia_hooks
from core.attacks.membership import mia
from core.audit import audit
from core.audit.report import render_report, stored_results
from core.reporting.html import token_heat_maps

SETTINGS = ("extraction.n_samples=8", "extraction.tokens=12", "extraction.min_span_tokens=1",
            "extraction.window=4", "extraction.top_k=5", "extraction.track=the",
            "inextractability.window=4", "mia.bootstrap=0")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A tiny audit of extraction, inextractability and membership inference with a reference
    and a DP run, and its report rendered from the stored runs."""
    home = tmp_path_factory.mktemp("lab-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEAKAGE_LAB_HOME", str(home))
        tiny = mia.tiny_config()
        config = audit.AuditConfig(
            model=tiny.model, reference=tiny.reference, members=tiny.data,
            corpus=tiny.frequency_corpus, attacks=("extraction", "inextractability", "mia"),
            sigma=1.0, q=0.01, steps=100, settings=SETTINGS, device="cpu")
        result = audit.run(config)
        results = stored_results(result)
        yield result, results, render_report(result, results)


def section(text: str, name: str) -> str:
    return re.search(rf"<section id='{name}'>(.*?)</section>", text, re.S).group(1)


def test_the_report_gives_b_beside_l_p0_from_the_audits_dp_run(recorded):
    result, results, text = recorded
    assert [e.status for e in result.entries] == ["done"] * 3
    bits = results["inextractability"]
    assert bits.dp_bound_bits is not None and bits.window == 4
    part = section(text, "inextractability")
    assert (f"<td>{bits.b:.2f}</td><td>{bits.greedy_fraction:.2%}</td>"
            f"<td>{bits.dp_bound_bits:.2f}</td>") in part
    assert f"L(p0) = {bits.dp_bound_bits:.2f} bits" in part   # the verdict
    assert f"<td>{round(bits.records[0].b, 3)}</td>" in part  # the easiest window


def test_the_report_gives_p_z_and_b_of_what_extraction_found(recorded):
    _, results, text = recorded
    part = section(text, "extraction")
    rows = extractability_rows(results["extraction"])
    assert any(r["found"] == "tracked phrase" for r in rows) and len(rows) > 1
    assert "How extractable" in part and "top-k 40" in part
    for row in rows:
        cells = "".join(f"<td>{html.escape(str(v))}</td>" for v in
                        (row["b (bits)"], row["log2 p_z"]))
        assert cells in part


def test_the_report_draws_the_heat_map_of_the_highest_scoring_members(recorded):
    _, results, text = recorded
    part = section(text, "mia")
    membership = results["mia"]
    best = membership.best()
    top = max((r for r in membership.rows if r.member), key=lambda r: r.scores[best.name])
    assert part.count("<p class='heat'>") == mia_hooks.HEAT_TEXTS
    assert "class='heat-legend" in part and "log p_target − log p_reference" in part
    first = re.search(r"<p class='heat'>(.*?)</p>", part, re.S).group(1)
    tokens = re.findall(r"<span style='background:[^']+' title='([^']+)'>([^<]*)</span>", first)
    assert [html.unescape(t) for _, t in tokens] == [t.replace("\n", "⏎") for t in top.tokens]
    assert [float(v) for v, _ in tokens] == pytest.approx(top.token_diff, abs=1e-3)
    no_reference = [dataclasses.replace(r, tokens=[], token_diff=[]) for r in membership.rows]
    without = dataclasses.replace(membership, rows=no_reference)
    assert "class='heat'" not in mia_hooks.section(without)


def test_a_heat_map_colours_by_sign_on_one_scale():
    drawn = token_heat_maps([("t", ["a", "b", "c"], [2.0, -1.0, 0.0])])
    assert "background:rgba(33,102,172,0.850)' title='+2.000'>a<" in drawn   # blue, full
    assert "background:rgba(178,24,43,0.425)' title='-1.000'>b<" in drawn    # red, half
    assert "−2.00" in drawn and "+2.00" in drawn                               # the legend
