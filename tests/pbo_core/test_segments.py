import numpy as np
import pandas as pd
import pytest

from pbo_core.data import Feature, PreferenceData, Schema, Study
from pbo_core.models.linear import newton_batch
from pbo_core.segments import (
    CovariateLogit,
    PersonalLogit,
    PooledLogit,
    SegmentLogitHierarchy,
    _kron_newton,
    _padded,
    cohort_arrays,
    value_of_time,
)

#: true (time, cost) slopes per level of the 'pass' feature: pass holders care about time
SLOPES = {0: (-0.02, -0.04), 1: (-0.06, -0.01)}


def travellers(n_users: int = 160, tasks: int = 9, seed: int = 0, groups: bool = True) -> Study:
    """Respondents choosing between two trips; a travel pass changes their trade-off."""
    rng = np.random.default_rng(seed)
    item_schema = Schema(
        (
            Feature("time", "numeric", bounds=(0, 200), unit="min"),
            Feature("cost", "numeric", bounds=(0, 200), unit="CHF"),
        )
    )
    has_pass = rng.integers(0, 2, n_users)
    noise = rng.integers(0, 3, n_users)
    X, pairs, resp, task = [], [], [], []
    for u in range(n_users):
        bt, bc = SLOPES[int(has_pass[u]) if groups else 0]
        for t in range(tasks):
            a, b = rng.uniform(10, 150, (2, 2))
            ua, ub = bt * a[0] + bc * a[1], bt * b[0] + bc * b[1]
            win = rng.random() < 1.0 / (1.0 + np.exp(-(ua - ub)))
            X += [a, b]
            i = len(X) - 2
            pairs.append([i, i + 1] if win else [i + 1, i])
            resp.append(u)
            task.append(t)
    users = pd.DataFrame(
        {
            "pass": np.where(has_pass == 1, "yes", "no"),
            "region": np.array(["north", "south", "west"])[noise],
        },
        index=pd.Index(np.arange(n_users), name="respondent"),
    )
    user_schema = Schema(
        (
            Feature("pass", "binary", levels=("no", "yes")),
            Feature("region", "categorical", levels=("north", "south", "west")),
        )
    )
    data = PreferenceData(
        np.array(X),
        np.array(pairs),
        schema=item_schema,
        respondent=np.array(resp),
        task=np.array(task),
    )
    return Study(
        "trips",
        "Trips",
        item_schema,
        data,
        users=users,
        user_schema=user_schema,
    )


def test_instability_tree_splits_on_the_feature_that_changes_the_trade_off() -> None:
    study = travellers()
    arr = cohort_arrays(study, covariates=("pass", "region"))
    h = SegmentLogitHierarchy().fit(arr, np.arange(arr.n_users))
    assert h.user_tree_.n_leaves == 2  # pass splits; region is noise and stops (Eq. 5)
    assert "pass" in h.rule(0, True).lower()
    table = h.segment_table("cost", "time")
    assert set(table["respondents"]) <= {int(n) for n in np.bincount(h.user_leaf_)}
    yes = h.assign(pd.DataFrame({"pass": ["yes"], "region": ["north"]}))[0]
    no = h.assign(pd.DataFrame({"pass": ["no"], "region": ["north"]}))[0]
    vot = dict(zip(table["segment"], table["value of time (CHF/hour)"], strict=True))
    # truth: 60 * 0.06 / 0.01 = 360 CHF/h with the pass, 60 * 0.02 / 0.04 = 30 without
    assert vot[yes] > 150 and vot[no] < 60


def test_segment_value_of_time_names_its_money_and_is_not_identified_without_it() -> None:
    """Fieller intervals per segment, divided by the money attribute named (no study, so
    nothing is guessed: no money and no time named, no value of time); a cost slope whose
    95 % CI includes 0 gives no number, only the reason; a clearly positive one gives
    none either."""
    study = travellers()
    arr = cohort_arrays(study, covariates=("pass", "region"))
    h = SegmentLogitHierarchy().fit(arr, np.arange(arr.n_users))
    assert not any("value of time" in c for c in h.segment_table().columns)
    table = h.segment_table("cost", "time")
    assert set(table["money attribute"]) == {"cost"}  # the feature's label (none: its name)
    text = table["value of time [95% CI]"]
    assert text.str.contains(r"CHF per hour \[95% CI ").all()
    # no money attribute: no value of time at all
    assert not any("value of time" in c for c in h.segment_table("", "time").columns)
    # the cost slope not clearly nonzero: "not identified", never a point estimate
    ic = h.money_column("cost")
    wrong = h.segment_coef_.copy()
    h.segment_coef_[:, ic] = np.abs(h.segment_coef_[:, ic])  # more cost preferred
    flipped = h.segment_table("cost", "time")
    assert flipped["value of time (CHF/hour)"].isna().all()
    assert (
        flipped["value of time [95% CI]"]
        .str.startswith("not shown: the cost slope is positive")
        .all()
    )
    h.segment_coef_[:] = wrong
    h.segment_cov_[:, ic, ic] = 1e4 * np.abs(h.segment_coef_[:, ic]) ** 2 + 1.0
    blurred = h.segment_table("cost", "time")
    assert blurred["value of time (CHF/hour)"].isna().all()
    assert (
        blurred["value of time [95% CI]"]
        .str.startswith("not identified: the cost slope's 95% CI includes 0")
        .all()
    )


def test_no_split_without_parameter_instability() -> None:
    study = travellers(groups=False, seed=3)
    arr = cohort_arrays(study, covariates=("pass", "region"))
    h = SegmentLogitHierarchy().fit(arr, np.arange(arr.n_users))
    assert h.user_tree_.n_leaves == 1


def test_consistency_split_needs_the_study_and_uses_eq15() -> None:
    study = travellers()
    arr = cohort_arrays(study, covariates=("pass", "region"))
    with pytest.raises(ValueError, match="needs the study"):
        SegmentLogitHierarchy(split="consistency").fit(arr, np.arange(arr.n_users))
    h = SegmentLogitHierarchy(split="consistency", min_users_leaf=10)
    h.fit(arr, np.arange(arr.n_users), study=study)
    assert h.user_tree_.n_leaves >= 1 and len(h.segment_coef_) == h.user_tree_.n_leaves


def test_interaction_logit_recovers_the_covariate_effect_and_beats_pooled() -> None:
    study = travellers(n_users=200)
    arr = cohort_arrays(study, covariates=("pass", "region"))
    train, test = np.arange(150), np.arange(150, 200)
    inter = CovariateLogit().fit(arr, train)
    pooled = PooledLogit().fit(arr, train)
    C = inter.centres(arr, test)
    has_pass = arr.U[test, 0] == 1
    # time slope (column 0) more negative with the pass, cost slope (1) less negative
    assert C[has_pass, 0].mean() < C[~has_pass, 0].mean()
    assert C[has_pass, 1].mean() > C[~has_pass, 1].mean()

    def acc(centres: np.ndarray) -> float:
        m = np.isin(arr.user, test)
        row = {u: i for i, u in enumerate(test)}
        z = (arr.d[m] * centres[[row[u] for u in arr.user[m]]]).sum(axis=1)
        return float((z > 0).mean())

    assert acc(C) > acc(pooled.centres(arr, test)) + 0.02


def test_kron_newton_matches_the_dense_glm() -> None:
    study = travellers(n_users=30, tasks=4)
    arr = cohort_arrays(study, covariates=("pass", "region"))
    users = np.arange(arr.n_users)
    Dp, Wp = _padded(arr, users)
    X1 = np.hstack([np.ones((len(users), 1)), arr.Xu])
    rows = (arr.d[:, :, None] * X1[arr.user][:, None, :]).reshape(len(arr.d), -1)
    prec = np.full(rows.shape[1], 0.3)
    b, H = _kron_newton(Dp, Wp, X1, prec)
    ref, Href = newton_batch(
        rows[None], np.ones((1, len(rows))), prec[None], np.zeros((1, len(prec))), "logit"
    )
    np.testing.assert_allclose(b, ref[0], atol=1e-6)
    np.testing.assert_allclose(H, Href[0], rtol=1e-6, atol=1e-8)


def test_personal_update_starts_at_the_centre_and_moves_with_own_answers() -> None:
    study = travellers(n_users=120)
    arr = cohort_arrays(study, covariates=("pass", "region"))
    m = PersonalLogit(PooledLogit()).fit(arr, np.arange(100))
    assert m.rho_ > 0
    u = 110
    rows = arr.d[arr.user == u]
    B = m.coefficients(arr, u, [rows[:0], rows])
    np.testing.assert_allclose(B[0], m.centre_.coef_, atol=1e-9)  # cold start = centre
    assert not np.allclose(B[1], B[0])


def test_value_of_time_and_its_delta_method_se() -> None:
    beta = np.array([-0.03, -0.015])
    cov = np.array([[1e-5, 2e-6], [2e-6, 4e-6]])
    v, se = value_of_time(beta, cov, 0, 1)
    assert v == pytest.approx(120.0)
    g = np.array([60 / -0.015, -60 * -0.03 / 0.015**2])
    assert se == pytest.approx(np.sqrt(g @ cov @ g))
    assert np.isnan(value_of_time(np.array([-0.03, 0.0]), cov, 0, 1)[0])


def test_the_interaction_logit_warns_when_newton_stops_at_its_cap() -> None:
    from pbo_core.models.solver import ConvergenceWarning
    from pbo_core.segments import _kron_newton

    rng = np.random.default_rng(0)
    Dp = rng.normal(size=(6, 5, 2)) * 5.0
    Wp = np.ones((6, 5))
    X1 = np.column_stack([np.ones(6), rng.integers(0, 2, 6)])
    prec = np.full(4, 1e-3)
    with pytest.warns(ConvergenceWarning):
        _kron_newton(Dp, Wp, X1, prec, max_iter=1)
    beta, H = _kron_newton(Dp, Wp, X1, prec)
    assert np.isfinite(beta).all() and np.allclose(H, H.T)


def test_pooled_logit_is_the_products_one_pooled_logit() -> None:
    """Eq. 2 on the cohort arrays equals LogitSurrogate on the study (same fit, one home)."""
    from pbo_core.models.linear import LogitSurrogate

    study = travellers(n_users=80)
    arr = cohort_arrays(study, covariates=("pass", "region"))
    cohort = PooledLogit(0.3).fit(arr, np.arange(arr.n_users))
    direct = LogitSurrogate(alpha=0.3).fit(study.data)
    np.testing.assert_allclose(cohort.coef_, direct.coef_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(cohort.coef_cov_, direct.coef_cov_, rtol=1e-7, atol=1e-12)
    # by CV the strength comes from the grid, with the loss of every grid value kept
    cv = PooledLogit().fit(arr, np.arange(arr.n_users))
    assert cv.cv_loss_ is not None and cv.cv_loss_.shape == (11,)
    assert cv.alpha_ == pytest.approx(float(np.logspace(2, -3, 11)[np.argmin(cv.cv_loss_)]))


def test_fixed_segment_tree_keeps_every_chosen_strength() -> None:
    """Eq. 6's fold refits reuse the full fit's strengths: shrinkage and the pooled alpha."""
    study = travellers(n_users=120)
    arr = cohort_arrays(study, covariates=("pass", "region"))
    h = SegmentLogitHierarchy(min_users_leaf=20).fit(arr, np.arange(100))
    f = h.fixed()
    assert f.shrinkage == h.shrinkage_ and f.pooled_alpha == h.pooled_.alpha_
    sub = f.fit(arr, np.arange(0, 100, 2))
    assert sub.pooled_.alpha_ == h.pooled_.alpha_ and sub.pooled_.cv_loss_ is None
    assert sub.shrinkage_ == h.shrinkage_


def test_batched_personal_updates_are_the_single_ones() -> None:
    study = travellers(n_users=120)
    arr = cohort_arrays(study, covariates=("pass", "region"))
    m = PersonalLogit(CovariateLogit(alpha=10.0)).fit(arr, np.arange(100))
    users = np.array([100, 105, 111, 119])
    owns = []
    for u in users:  # different numbers of answers: batches of different padded lengths
        rows = arr.d[arr.rows_of(u)]
        owns.append([rows[:k] for k in range(0, int(u) % 7 + 2)])
    many = m.coefficients_many(arr, users, owns)
    for u, own, B in zip(users, owns, many, strict=True):
        np.testing.assert_array_equal(B, m.coefficients(arr, int(u), own))


def test_a_fixed_personal_logit_refits_with_the_chosen_strengths_and_no_cv() -> None:
    study = travellers(n_users=120)
    arr = cohort_arrays(study, covariates=("pass", "region"))
    users = np.arange(100)
    for centre in (PooledLogit(), CovariateLogit(), SegmentLogitHierarchy(min_users_leaf=20)):
        m = PersonalLogit(centre).fit(arr, users)
        f = m.fixed()
        assert f.rho == m.rho_
        f.fit(arr, users)
        assert f.rho_ == m.rho_ and f.cv_loss_ is None
        own = [arr.d[arr.rows_of(110)][:k] for k in (0, 3)]
        np.testing.assert_allclose(
            f.coefficients(arr, 110, own), m.coefficients(arr, 110, own), rtol=1e-9, atol=1e-12
        )
        # on more respondents the fixed model keeps the strengths and refits the centre
        g = m.fixed().fit(arr, np.arange(120))
        assert g.rho_ == m.rho_
        for attr in ("alpha_", "shrinkage_"):
            if hasattr(m.centre_, attr):
                assert getattr(g.centre_, attr) == getattr(m.centre_, attr)
