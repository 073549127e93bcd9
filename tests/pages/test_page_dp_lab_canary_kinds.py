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
    assert not at.error and not at.button(key="ca-run").disabled
