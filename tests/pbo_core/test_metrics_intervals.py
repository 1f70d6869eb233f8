"""Bootstrap intervals over respondents: bootstrap_ci, summarize, paired_difference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pbo_core.metrics import bootstrap_ci, paired_difference, summarize


def test_bootstrap_ci_covers_known_mean_at_nominal_rate():
    # 200 simulated studies of 60 respondents with skewed per-respondent accuracies
    rng = np.random.default_rng(20261201)
    true_mean = 0.7
    hits = 0
    for _ in range(200):
        x = rng.beta(7.0, 3.0, size=60)  # mean 0.7
        lo, hi = bootstrap_ci(x, n_boot=1000, rng=rng)
        hits += lo <= true_mean <= hi
    coverage = hits / 200
    assert 0.90 <= coverage <= 0.98, coverage


def test_bootstrap_ci_is_seeded_and_ordered():
    x = np.random.default_rng(1).normal(size=40)
    a = bootstrap_ci(x, rng=np.random.default_rng(5))
    b = bootstrap_ci(x, rng=np.random.default_rng(5))
    assert a == b
    assert a[0] < x.mean() < a[1]
    lo90, hi90 = bootstrap_ci(x, level=0.90, rng=np.random.default_rng(5))
    assert a[0] <= lo90 and hi90 <= a[1]


def test_bootstrap_ci_edge_cases():
    rng = np.random.default_rng(0)
    assert all(math.isnan(v) for v in bootstrap_ci([], rng=rng))
    assert bootstrap_ci([0.3], rng=rng) == (0.3, 0.3)
    assert bootstrap_ci([0.5, np.nan, 0.5], rng=rng) == (0.5, 0.5)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], level=1.0, rng=rng)


def test_summarize_fields():
    x = np.array([0.5, 0.7, 0.9, np.nan, 0.8])
    s = summarize(x, rng=np.random.default_rng(0))
    assert s.n == 4
    assert s.mean == pytest.approx(0.725)
    assert s.sd == pytest.approx(np.std([0.5, 0.7, 0.9, 0.8], ddof=1))
    assert s.se == pytest.approx(s.sd / 2)
    assert s.median == pytest.approx(0.75)
    assert s.ci95[0] <= s.mean <= s.ci95[1]


def test_paired_difference_uses_the_pairing():
    rng = np.random.default_rng(3)
    base = rng.uniform(0.5, 1.0, size=80)  # large between-respondent spread
    a = base + 0.02 + rng.normal(0, 0.01, size=80)
    b = base
    d = paired_difference(a, b, rng=np.random.default_rng(0))
    assert d.n == 80
    assert d.mean_diff == pytest.approx(np.mean(a - b))
    assert 0.0 < d.ci[0] < d.mean_diff < d.ci[1]  # paired CI excludes 0
    unpaired = bootstrap_ci(a, rng=np.random.default_rng(0))
    assert d.ci[1] - d.ci[0] < 0.5 * (unpaired[1] - unpaired[0])
    with pytest.raises(ValueError):
        paired_difference([1.0], [1.0, 2.0], rng=rng)


def test_paired_difference_coverage():
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(200):
        b = rng.uniform(0.4, 0.9, size=50)
        a = b + rng.normal(0.03, 0.05, size=50)
        d = paired_difference(a, b, n_boot=1000, rng=rng)
        hits += d.ci[0] <= 0.03 <= d.ci[1]
    assert 0.90 <= hits / 200 <= 0.98
