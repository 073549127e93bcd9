"""The extraction page's "Memorisation in bits" tab: demo defaults from the preset, a recorded
run drawn (b beside the bound, the phrases and pairs, the easiest windows), a run started from
the tab, and bad input refused at the form."""

import dataclasses
import json
import math

from core import sources
from core.attacks.inextractability import spec as ix
from core.demo.paths import load_manifest
from core.jobs import Store, load_result, run_now
from core.runtime import no_progress
from pagetest import page_app, record_run, wait_for_run


def test_the_tab_draws_a_recorded_run_beside_the_bound(demo_home):
    demo = sources.preset(ix.SPEC.name, "demo")
    run_now(ix.SPEC, ix.InextractabilityConfig(**demo | {"window": 4, "sigma": 1.0}),
            progress=no_progress)
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception and not at.error
    assert [t.label for t in at.tabs] == ["Extraction", "Memorisation in bits"]
    assert at.selectbox(key="inx-model").value == "demo:updated"
    assert at.text_input(key="inx-corpus-path").value == "demo:private_train"
    assert at.number_input(key="inx-window").value == 16      # the preset's, not the paper's 50
    manifest = load_manifest()
    assert at.text_area(key="inx-phrases").value.splitlines() == [c.phrase for c in sorted(
        manifest.canaries, key=lambda c: -c.count)]
    assert at.text_area(key="inx-prefixes").value.splitlines()[-1] == manifest.secret.prompt

    result = load_result(Store().runs("inextractability")[0])
    pairs = at.get_by_key("inx-result-pairs").dataframe[0].value
    assert list(pairs["suffix"]) == [p.suffix for p in result.pairs]
    assert list(pairs["b (bits)"]) == [round(p.b, 3) for p in result.pairs]
    assert pairs["L(p0) for b bits"].notna().all()
    records = at.get_by_key("inx-result-records").dataframe[0].value
    assert list(records["b (bits)"]) == sorted(records["b (bits)"])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["b (l = 4, m = 20)"] == f"{result.b:.2f} bits"
    assert metrics["DP bound L(p0) for b bits"] == f"{result.dp_bound_bits:.2f} bits"
    layout = json.loads(next(c for c in at.get("plotly_chart")
                             if c.key == "inx-result-histogram").proto.spec)["layout"]
    assert layout["title"]["text"] == "b of every 4-token window"


def test_the_tab_refuses_bad_input_and_starts_a_run(demo_home):
    at = page_app("app_pages/extraction.py").run()
    at.text_area(key="inx-suffixes").set_value("one\ntwo\nthree").run()
    assert not at.exception and "one prefix per suffix" in at.error[0].value
    assert at.button(key="inx-run").disabled
    at.text_area(key="inx-prefixes").set_value("My pin is").run()
    at.text_area(key="inx-suffixes").set_value(" 123").run()
    at.number_input(key="inx-window").set_value(4)
    at.button(key="inx-run").click().run()
    run = wait_for_run("inextractability")
    assert run.status == "done" and run.params["window"] == 4
    # a suffix after its prefix keeps its leading space; the reference is the preset's prior
    assert run.params["suffixes"] == [" 123"] and run.params["reference"] == "demo:base"


def test_a_suffix_outside_the_sampling_scheme_reads_back_as_never(demo_home):
    config = ix.tiny_config()
    result = ix.run(dataclasses.replace(config, top_k=1))   # " 4242" is not the greedy path
    assert result.pairs[0].log2_p == -math.inf and math.isinf(result.pairs[0].samples_50)
    record_run(ix.SPEC, config, result)   # stored: non-finite numbers become None
    at = page_app("app_pages/extraction.py").run()
    assert not at.exception and not at.error
    pairs = at.get_by_key("inx-result-pairs").dataframe[0].value
    assert list(pairs["log2 p_z"]) == ["−inf"] and list(pairs["samples for P ≥ 0.5"]) == ["never"]
