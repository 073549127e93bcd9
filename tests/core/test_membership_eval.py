"""Membership evaluation: the vectorised AUROC and TPR at FPR against scikit-learn, the
bootstrap against the scipy one it replaced, the knowledge curve, old stored results."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score, roc_curve

from bench.bench_membership_eval import old_interval
from core.evaluation import membership as me
from core.serialize import from_jsonable, to_jsonable

TARGETS = (0.0, 0.001, 0.01, 0.05, 0.1, 0.25, 1 / 3, 0.5, 0.99, 1.0)


def _sklearn_rows(inside, outside, target=None):
    """Per row: roc_auc_score, or tpr_at_fpr on the full ROC at ``target``."""
    values = []
    for a, b in zip(inside, outside):
        labels, scores = np.r_[np.ones(len(a)), np.zeros(len(b))], np.r_[a, b]
        if target is None:
            values.append(roc_auc_score(labels, scores))
        else:
            fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
            values.append(me.tpr_at_fpr(fpr, tpr, target))
    return np.array(values)


def _brute_tpr(a, b, target):
    """Best TPR over every threshold 'score >= t' that flags at most target · n0 non-members."""
    return max((a >= t).mean() for t in np.r_[a, b, np.inf] if (b >= t).mean() <= target + 1e-12)


def test_row_metrics_equal_scikit_learn_on_random_and_tied_scores():
    rng = np.random.default_rng(0)
    for inside, outside in ((rng.normal(0.5, 1, (40, 30)), rng.normal(0, 1, (40, 70))),
                            (rng.integers(0, 4, (40, 30)), rng.integers(0, 4, (40, 70)))):
        np.testing.assert_allclose(me.auroc_rows(inside, outside), _sklearn_rows(inside, outside),
                                   atol=1e-12)
        for target in TARGETS:
            assert np.array_equal(me.tpr_at_fpr_rows(inside, outside, target),
                                  _sklearn_rows(inside, outside, target)), target


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=12),
       st.lists(st.integers(0, 5), min_size=1, max_size=25),
       st.sampled_from(TARGETS))
def test_row_metrics_equal_scikit_learn_and_brute_force_on_any_scores(inside, outside, target):
    a, b = np.array(inside, dtype=float), np.array(outside, dtype=float)
    assert me.auroc_rows(a[None], b[None])[0] == pytest.approx(_sklearn_rows([a], [b])[0],
                                                                abs=1e-12)
    tpr = me.tpr_at_fpr_rows(a[None], b[None], target)[0]
    assert tpr == _sklearn_rows([a], [b], target)[0] == _brute_tpr(a, b, target)


def test_tpr_at_fpr_keeps_roc_points_that_scikit_learn_drops_as_collinear():
    # in [5, 4, 3], out [5, 4, 3, 0]: "score >= 4" flags 2 of 4 out and 2 of 3 in, a point on
    # the line from (1/4, 1/3) to (3/4, 1) that roc_curve drops by default
    m = me.evaluate([1, 1, 1, 0, 0, 0, 0], [5, 4, 3, 5, 4, 3, 0], bootstrap=0)
    labels = [1, 1, 1, 0, 0, 0, 0]
    fpr, tpr, _ = roc_curve(labels, [5, 4, 3, 5, 4, 3, 0])
    assert me.tpr_at_fpr(fpr, tpr, 0.5) == pytest.approx(1 / 3)   # the thinned ROC understates
    assert [0.5, 2 / 3] in [[f, pytest.approx(t)] for f, t in zip(m.roc_fpr, m.roc_tpr)]
    assert me.tpr_at_fpr_rows(np.array([[5, 4, 3]]), np.array([[5, 4, 3, 0]]), 0.5)[0] == 2 / 3


def test_allowed_false_positives_and_the_calibrated_threshold_agree():
    assert [me.allowed_false_positives(f, 100) for f in (0.0, 0.009, 0.01, 0.29, 1.0)] == \
        [0, 0, 1, 29, 100]
    scores = np.random.default_rng(1).normal(size=200)
    for fpr in (0.001, 0.01, 0.05, 0.29):
        flagged = (scores > me.calibrate_threshold(scores, fpr)).sum()
        assert flagged == me.allowed_false_positives(fpr, 200)


def _synthetic(n_in, n_out, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n_in), np.zeros(n_out)].astype(int)
    return labels, np.round(rng.normal(labels * 1.0, 1.0), 2)   # rounding makes ties


def test_evaluate_intervals_contain_the_estimate_are_seeded_and_match_the_scipy_bootstrap():
    labels, scores = _synthetic(150, 250)
    m = me.evaluate(labels, scores, bootstrap=2000, seed=3)
    assert m.auroc == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    for name in me.STATISTICS:
        low, high = getattr(m, f"{name}_ci")
        assert low <= getattr(m, name) <= high, name
    assert m == me.evaluate(labels, scores, bootstrap=2000, seed=3)
    assert m.auroc_ci != me.evaluate(labels, scores, bootstrap=2000, seed=4).auroc_ci
    low, high = old_interval(labels, scores, resamples=2000, seed=3)
    for i, name in enumerate(me.STATISTICS):
        if name != "tpr_at_01pct_fpr":   # 250 out: 0.1% FPR flags none, its interval is noise
            ours = getattr(m, f"{name}_ci")
            assert ours[1] - ours[0] == pytest.approx(high[i] - low[i], rel=0.2), name
            assert ours == pytest.approx([low[i], high[i]], abs=0.25 * (high[i] - low[i])), name


def test_evaluate_reports_tpr_at_a_tenth_of_a_percent_and_the_fpr_resolution():
    labels, scores = _synthetic(300, 2000)
    m = me.evaluate(labels, scores, bootstrap=0)
    inside, outside = scores[labels == 1], scores[labels == 0]
    assert m.tpr_at_01pct_fpr == _brute_tpr(inside, outside, 0.001)   # 2 false positives
    assert m.fpr_resolution == 1 / 2000 and m.tpr_at_01pct_fpr_ci == []


def test_one_member_or_one_non_member_gives_a_defined_interval():
    m = me.evaluate([1, 0, 0, 0], [0.5, 1.0, 0.0, -1.0], bootstrap=50, seed=0)
    assert m.auroc == pytest.approx(2 / 3) and m.fpr_resolution == 1 / 3
    assert m.auroc_ci[0] <= 2 / 3 <= m.auroc_ci[1] and 0 <= m.auroc_ci[0] <= m.auroc_ci[1] <= 1
    alone = me.evaluate([1, 0], [1.0, 0.0], bootstrap=20)
    assert alone.auroc_ci == [1.0, 1.0] and alone.tpr_at_01pct_fpr_ci == [1.0, 1.0]
    assert me.auroc_rows(np.array([[2.0]]), np.array([[2.0]])) == [0.5]


def test_a_result_stored_before_tpr_at_a_tenth_of_a_percent_still_loads():
    stored = to_jsonable(me.evaluate(*_synthetic(20, 40), bootstrap=20))
    for name in ("tpr_at_01pct_fpr", "tpr_at_01pct_fpr_ci", "fpr_resolution"):
        del stored[name]
    old = from_jsonable(me.Metrics, stored)
    assert old.tpr_at_01pct_fpr is None and old.tpr_at_01pct_fpr_ci == []
    assert old.fpr_resolution == 1 / 40
    fresh = me.evaluate(*_synthetic(20, 40), bootstrap=20)
    assert from_jsonable(me.Metrics, to_jsonable(fresh)) == fresh


def _users(seed=0):
    rng = np.random.default_rng(seed)
    values = {f"u{i}": rng.normal(0.3 * (i % 2), 1.0, rng.integers(1, 9)) for i in range(30)}
    members = {f"u{i}": bool(i % 2) for i in range(30)} | {"unknown": None}
    return values | {"unknown": np.zeros(3)}, members


def test_knowledge_curve_at_the_most_samples_is_the_auroc_of_the_full_means(monkeypatch):
    values, members = _users()
    curve = me.knowledge_curve(values, members, draws=40, seed=1)
    assert [p.m for p in curve] == list(range(1, 9))
    assert curve == me.knowledge_curve(values, members, draws=40, seed=1)
    users = [u for u in values if members[u] is not None]
    full = roc_auc_score([members[u] for u in users], [values[u].mean() for u in users])
    assert curve[-1].auroc_mean == pytest.approx(full) and curve[-1].auroc_std < 1e-12
    assert curve[0].auroc_std > 0
    assert curve[-1].users_short == sum(len(values[u]) < 8 for u in users)
    monkeypatch.setattr(me, "CURVE_CELLS", 8 * 31)   # one draw a batch
    batched = me.knowledge_curve(values, members, draws=40, seed=1)
    assert [p.m for p in batched] == [p.m for p in curve]
    assert batched[-1].auroc_mean == pytest.approx(full) and batched[-1].auroc_std < 1e-12


def test_knowledge_curve_per_m_matches_one_sklearn_auroc_per_draw():
    values, members = _users(2)
    curve = me.knowledge_curve(values, members, max_m=3, draws=1, seed=5)
    means = me._prefix_means([values[u] for u in values if members[u] is not None], 3, 1,
                             np.random.default_rng(5))
    labels = [members[u] for u in values if members[u] is not None]
    assert [p.auroc_mean for p in curve] == pytest.approx(
        [roc_auc_score(labels, means[m, 0]) for m in range(3)], abs=1e-12)


def test_knowledge_curve_stops_on_cancel_and_needs_both_groups():
    values, members = _users()
    cancel = threading.Event()
    cancel.set()
    assert me.knowledge_curve(values, members, draws=5, cancel=cancel) == []
    with pytest.raises(me.UserError, match="both held-in and held-out"):
        me.knowledge_curve(values, {u: True for u in values})
