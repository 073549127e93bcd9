"""The audit from the command line (issue #32): ``--no-record`` stores none of its parts, and a
model that does not load stops it once, before the first attack, with one message."""

from core.__main__ import main
from core.jobs import Store

DEMO_INPUTS = ["--reference", "demo:base", "--corpus", "demo:private_train",
               "--users", "demo:user_samples", "--members", "demo:membership", "--device", "cpu"]


def test_audit_with_no_record_stores_no_run(demo_home, capsys):
    assert main(["audit", "--no-record", "--model", "demo:updated", *DEMO_INPUTS,
                 "--attacks", "mia", "--set", "mia.bootstrap=0"]) == 0
    assert "mia" in capsys.readouterr().out
    assert Store().runs() == []


def test_a_model_that_does_not_load_stops_the_audit_before_the_first_attack(demo_home, tmp_path,
                                                                           capsys):
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    assert main(["audit", "--model", str(not_a_model), *DEMO_INPUTS]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "not-a-model" in errors[0], err
    assert "(1/5)" not in err and "(2/5)" not in err, err   # no attack started
    assert [(r.kind, r.status) for r in Store().runs()] == [("audit", "failed")]
