"""The DP lab's canary-audit form offers the canary kinds (core/dp/canary_kinds.py) and the
least-likely pool, and turns the choice into the config it runs."""

from pagetest import page_app


def test_the_canary_audit_form_offers_every_kind(demo_home):
    at = page_app("app_pages/dp_lab.py").run()
    assert not at.exception
    kind = at.selectbox(key="ca-kind")
    assert kind.options == ["random_words", "new_tokens", "least_likely", "bigram"]
    assert kind.value == "random_words"
    kind.set_value("least_likely").run()
    at.number_input(key="ca-least_likely_pool").set_value(1).run()
    assert "least-likely pool must be from 2 to 1,000,000" in at.error[0].value
    assert at.button(key="ca-run").disabled
    at.number_input(key="ca-least_likely_pool").set_value(300).run()
    assert not at.error, [e.value for e in at.error]
    assert not at.button(key="ca-run").disabled


def test_the_form_says_which_kind_was_tightest_on_the_demo(demo_home):
    """The caption is the recorded figures' (assets/demo_figures.json), kind by kind."""
    from ui.expected import load_figures

    rows = load_figures()["dp-canary-kinds"]["rows"]
    at = page_app("app_pages/dp_lab.py").run()
    caption = next(c.value for c in at.caption if "Tightest" in c.value).replace("\\_", "_")
    for sigma in dict.fromkeys(r["sigma"] for r in rows):
        top = max((r for r in rows if r["sigma"] == sigma), key=lambda r: r["lower"])
        if top["lower"] > 0:
            assert f"σ = {sigma:g}: {top['kind']}" in caption
    new = [f"{r['lower']:.2f}" for r in rows if r["kind"] == "new_tokens"]
    assert "new_tokens " + " / ".join(new) in caption



def test_the_canary_audit_takes_a_corpus_and_its_advanced_fields(demo_home):
    """The corpus is a field of the form (any model but the demo's comes without one), and the
    fields the spec puts on a page are all there, the advanced ones folded away."""
    at = page_app("app_pages/dp_lab.py").run()
    corpus = at.text_input(key="ca-corpus")
    demo_corpus = corpus.value
    assert demo_corpus   # the demo's preset
    corpus.set_value("").run()
    assert at.button(key="ca-run").disabled
    assert any("corpus" in error.value for error in at.error)
    at.text_input(key="ca-corpus").set_value(demo_corpus).run()
    assert not at.error, [e.value for e in at.error]
    assert not at.button(key="ca-run").disabled
    for name in ("clip", "max_records", "block_size", "checkpoint_every"):
        assert at.number_input(key=f"ca-{name}").value is not None
    assert at.text_input(key="ca-validation").value == "demo:validation"   # the preset's
