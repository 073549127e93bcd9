"""The extraction page draws a recorded run's p_z, n and b of each memorised span and tracked
phrase (the values stored, not recomputed), and a run recorded before them without the table."""

import dataclasses

import pytest

from core.attacks.extraction import spec as ex
from core.attacks.extraction.views import extractability_rows
from pagetest import page_app, record_run


def test_the_page_draws_p_z_and_b_of_a_recorded_run():
    config = dataclasses.replace(ex.tiny_config(), min_span_tokens=1, track=("the",))
    result = ex.run(config)
    first = result.extractability[0]
    result.extractability[0] = dataclasses.replace(first, b=123.25)   # only the record knows it
    record_run(ex.SPEC, config, result)
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception
    table = at.get_by_key("ex-extractability").dataframe[0].value
    assert list(table["b (bits)"]) == [r["b (bits)"] for r in extractability_rows(result)]
    assert table["b (bits)"].iloc[0] == 123.25
    assert list(table["found"]).count("tracked phrase") == 2   # once per sampling scheme
    assert any("under the sampling of the strategy that found it" in c.value for c in at.caption)

    record_run(ex.SPEC, config, dataclasses.replace(result, extractability=[],
                                                    extractability_scheme=""))
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception
    with pytest.raises(KeyError):   # no table for a run without them
        at.get_by_key("ex-extractability")
