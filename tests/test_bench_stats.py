"""Bench statistics: hand-computed values, scipy on random data, per-document grouping,
reproducible bootstrap, and thresholds never fitted on the cases they score."""

import math

import numpy as np
import pytest
from scipy import stats as sp

from anvil_local.bench import stats


def test_correlations_against_hand_computed_values():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([1.0, 3.0, 2.0, 4.0])
    # ranks equal values: d = (0, -1, 1, 0), rho = 1 - 6*2 / (4*15) = 0.8
    assert stats.correlation("spearman", x, y) == pytest.approx(0.8)
    # 6 pairs, one discordant (2,3): tau = (5 - 1) / 6
    assert stats.correlation("kendall", x, y) == pytest.approx(4 / 6)
    # centred x (-1.5,-.5,.5,1.5), y (-1.5,.5,-.5,1.5): cov 4, var 5 each -> 0.8
    assert stats.correlation("pearson", x, y) == pytest.approx(0.8)


def test_correlations_match_scipy_on_random_data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=60)
    y = np.round(x + rng.normal(size=60), 0)  # ties, as with 1-5 ratings
    assert stats.correlation("spearman", x, y) == pytest.approx(sp.spearmanr(x, y).statistic)
    assert stats.correlation("kendall", x, y) == pytest.approx(
        sp.kendalltau(x, y, variant="b").statistic
    )
    assert stats.correlation("pearson", x, y) == pytest.approx(sp.pearsonr(x, y).statistic)


def test_a_constant_side_has_no_correlation():
    assert math.isnan(stats.correlation("spearman", np.ones(5), np.arange(5.0)))
    assert math.isnan(stats.correlation("pearson", np.arange(5.0), np.full(5, 2.0)))
    assert math.isnan(stats.correlation("kendall", np.array([1.0]), np.array([2.0])))


def test_per_document_averages_documents_and_counts_skipped_ones():
    pred = np.array([1, 2, 3, 1, 2, 3, 5, 5, 5], dtype=float)
    human = np.array([1, 2, 3, 3, 2, 1, 1, 2, 3], dtype=float)
    docs = ["a", "a", "a", "b", "b", "b", "c", "c", "c"]
    groups = stats.doc_groups(docs)
    assert [g.tolist() for g in groups] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    mean, used, skipped = stats.per_document("spearman", pred, human, groups)
    # doc a: +1, doc b: -1, doc c: constant prediction -> skipped
    assert (mean, used, skipped) == (0.0, 2, 1)
    out = stats.graded(pred, human, docs)
    assert out["doc_spearman"].value == 0.0
    assert out["docs_used"] == 2 and out["docs_skipped"] == 1


def test_the_bootstrap_resamples_documents_and_is_reproducible():
    rng = np.random.default_rng(0)
    docs = [f"d{i // 8}" for i in range(80)]
    x = rng.normal(size=80)
    y = x + rng.normal(size=80)
    groups = stats.doc_groups(docs)

    def spearman(i):
        return stats.correlation("spearman", x[i], y[i])

    first = stats.bootstrap(spearman, groups)
    assert first == stats.bootstrap(spearman, groups)
    assert first != stats.bootstrap(spearman, groups, seed=1)
    low, high = first
    assert low < spearman(np.arange(80)) < high

    seen_sizes = set()

    def size(i):
        seen_sizes.add(len(i))
        return float(len(i))

    stats.bootstrap(size, groups, resamples=50)
    assert seen_sizes == {80}  # whole documents of 8 cases: always 10 x 8 cases


def test_auroc_balanced_accuracy_and_kappa_by_hand():
    score = np.array([0.1, 0.4, 0.35, 0.8])
    label = np.array([0, 0, 1, 1])
    # positive/negative pairs: (0.35 vs 0.1) win, (0.35 vs 0.4) loss, 0.8 wins both -> 3/4
    assert stats.auroc(score, label) == pytest.approx(0.75)
    pred = (score >= 0.38).astype(int)  # 0, 1, 0, 1
    # recall of 1: 1/2, recall of 0: 1/2 -> 0.5; observed agreement 0.5, chance 0.5 -> kappa 0
    assert stats.balanced_accuracy(pred, label) == pytest.approx(0.5)
    assert stats.kappa(pred, label) == pytest.approx(0.0)
    pred = np.array([0, 0, 1, 1])
    assert stats.balanced_accuracy(pred, label) == 1.0 and stats.kappa(pred, label) == 1.0


def test_auroc_matches_the_mann_whitney_u_statistic():
    rng = np.random.default_rng(5)
    label = rng.integers(0, 2, 100)
    score = np.round(rng.random(100) + 0.3 * label, 1)  # ties included
    u = sp.mannwhitneyu(score[label == 1], score[label == 0]).statistic
    expected = u / (label.sum() * (len(label) - label.sum()))
    assert stats.auroc(score, label) == pytest.approx(expected)


def test_a_single_class_has_no_auroc():
    assert math.isnan(stats.auroc(np.array([0.2, 0.9]), np.array([1, 1])))


def test_the_threshold_maximises_balanced_accuracy_on_its_own_cases():
    score = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9])
    label = np.array([0, 0, 0, 1, 1, 1])
    cut = stats.choose_threshold(score, label)
    assert 0.3 < cut <= 0.6
    assert stats.balanced_accuracy((score >= cut).astype(int), label) == 1.0


def test_the_fitted_threshold_never_sees_the_cases_it_scores():
    docs = [f"d{i % 7}" for i in range(70)]
    fold = stats.folds(docs)
    for doc in set(docs):
        assert len({fold[i] for i, d in enumerate(docs) if d == doc}) == 1  # a doc stays whole
    assert set(fold.tolist()) == {0, 1}

    rng = np.random.default_rng(2)
    label = rng.integers(0, 2, 70)
    score = rng.random(70)
    pred, cuts = stats.cross_fitted_predictions(score, label, docs)
    for k in (0, 1):
        train = fold != k
        # the cut applied to fold k is the one chosen on the other fold alone
        assert cuts[k] == stats.choose_threshold(score[train], label[train])
        test = fold == k
        assert np.array_equal(pred[test], (score[test] >= cuts[k]).astype(int))


def test_calibration_by_hand():
    prob = np.array([0.05, 0.05, 0.95, 0.95, 0.55])
    label = np.array([0, 1, 1, 1, 0])
    ece, table = stats.calibration(prob, label)
    # bins: 0.0-0.1 {0.05, 0.05} observed 0.5 -> |0.05-0.5| * 2/5; 0.5-0.6 {0.55} observed 0
    # -> 0.55 * 1/5; 0.9-1.0 {0.95, 0.95} observed 1 -> 0.05 * 2/5
    assert ece == pytest.approx(0.45 * 2 / 5 + 0.55 / 5 + 0.05 * 2 / 5)
    assert [row["cases"] for row in table] == [2, 1, 2]
    assert table[0]["observed_rate"] == 0.5


def test_binary_reports_everything_with_intervals():
    rng = np.random.default_rng(1)
    docs = [f"d{i // 3}" for i in range(90)]
    label = rng.integers(0, 2, 90)
    score = np.clip(0.5 * label + rng.random(90) * 0.6, 0, 1)
    out = stats.binary(score, label, docs, threshold=0.5)
    for key in ("auroc", "balanced_accuracy", "kappa", "balanced_accuracy_fitted", "kappa_fitted"):
        est = out[key]
        assert est.low <= est.value <= est.high, key
    assert out["auroc"].value > 0.7
    assert 0 <= out["ece"] <= 1 and out["reliability"]


def test_paired_difference_is_zero_for_a_metric_against_itself():
    rng = np.random.default_rng(4)
    docs = [f"d{i // 4}" for i in range(40)]
    x, y = rng.normal(size=40), rng.normal(size=40)

    def stat(i):
        return stats.correlation("spearman", x[i], y[i])

    same = stats.paired_difference(stat, stat, docs, 40)
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)
    better = stats.paired_difference(
        stat, lambda i: stats.correlation("spearman", y[i], y[i]), docs, 40
    )
    assert better.value > 0 and better.low > 0
