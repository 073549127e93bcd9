"""A page's whole-number field (issue #45): 1.5 or 1e308 there is refused in one line that names
the field and its range, with Run disabled, not read as 1 (a browser's integer input did: the
field is a number input of any number, checked by the config; in Chromium:
tests/browser/test_browser_pages.py); 1e3 is 1000. (A number input cannot hold nan or inf:
Streamlit puts its default back.)"""

from pagetest import page_app


def test_a_number_that_is_not_whole_keeps_run_disabled_and_says_the_range():
    at = page_app("app_pages/lab_gradient_leakage.py").run()
    for value, shown in ((1.5, "got 1.5"), (1e308, "not 1.000e+308")):
        at.number_input(key="dlg-iterations").set_value(value).run()
        assert not at.exception, value
        [error] = [e.value for e in at.error]
        assert error.startswith("L-BFGS iterations") and "\n" not in error, error
        assert "from 1 to 1,000" in error and shown in error, error
        assert at.button(key="dlg-run").disabled
        at.number_input(key="dlg-iterations").set_value(1e3).run()
        assert not at.error and not at.button(key="dlg-run").disabled
        assert at.number_input(key="dlg-iterations").value == 1000
