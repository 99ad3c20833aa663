"""Beta-binomial, DP-prior, gamma-Poisson and the Laplace sanitizer.

The privacy bounds are checked by exact enumeration from independent closed forms (SciPy's
beta-binomial, multinomial and negative-binomial pmfs), not from the code under test: each holds
at the derived parameter and fails below it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from scipy import stats
from scipy.special import logsumexp

import dipsy
from dipsy.engine import NumpyEngine
from dipsy.errors import DipsyError
from dipsy.methods.dp_prior import minimum_prior
from dipsy.methods.gamma_poisson import least_strength
from dipsy.privacy.audit import compositions, largest_privacy_loss
from dipsy.privacy.measurement import discrete_laplace_variance
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_laplace

EPSILONS = [0.5, 1.0, 5.0]


# -- beta-binomial (Charest 2010) ----------------------------------------------------------------


def beta_binomial_loss(n: int, a: float) -> float:
    """max |log p(s*|s) - log p(s*|s')| over s' = s ± 1, from SciPy's beta-binomial pmf."""
    out = np.arange(n + 1)
    logp = np.array([stats.betabinom.logpmf(out, n, s + a, n - s + a) for s in range(n + 1)])
    return float(np.max(np.abs(logp[1:] - logp[:-1])))


@pytest.mark.parametrize("n", [1, 2, 5, 8, 20])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_beta_binomial_bound_holds_at_the_least_prior_and_fails_below(n, epsilon):
    a = n / math.expm1(epsilon)
    assert beta_binomial_loss(n, a) <= epsilon + 1e-9
    assert beta_binomial_loss(n, 0.5 * a) > epsilon


def test_beta_binomial_takes_one_categorical_column():
    data = pd.DataFrame({"x": [0, 1, 1, 0, 1], "y": [0, 0, 1, 1, 1]})
    domain = dipsy.Domain.from_sizes({"x": 2, "y": 2})
    with pytest.raises(DipsyError, match="one categorical column"):
        dipsy.synthesize(data, domain, method="beta-binomial", epsilon=1.0)
    cat = dipsy.Domain((dipsy.Column("x", "categorical", categories=(0, 1)),))
    release = dipsy.synthesize(data[["x"]], cat, method="beta-binomial", epsilon=1.0, sets=4, seed=1)
    assert len(release.tables) == 4 and release.parameters["alpha"] == pytest.approx(5 / math.expm1(0.25))


# -- DP-prior (McClure & Reiter 2012) --------------------------------------------------------------


def dp_prior_log_pmf(a: float):
    def log_pmf(outputs: np.ndarray, y: np.ndarray) -> np.ndarray:
        p = (y + a) / (y.sum() + len(y) * a)
        return stats.multinomial.logpmf(outputs, int(y.sum()), p)

    return log_pmf


@pytest.mark.parametrize("cells", [2, 3])
@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_dp_prior_bound_holds_at_the_least_prior_and_fails_below(cells, n, epsilon):
    a = minimum_prior(n, epsilon)
    assert largest_privacy_loss(dp_prior_log_pmf(a), n, cells) <= epsilon + 1e-9
    assert largest_privacy_loss(dp_prior_log_pmf(0.5 * a), n, cells) > epsilon


def test_dp_prior_releases_one_set():
    data = pd.DataFrame({"x": [0, 1, 1]})
    with pytest.raises(DipsyError, match="single set"):
        dipsy.synthesize(data, dipsy.Domain.from_sizes({"x": 2}), method="dp-prior", epsilon=1.0, sets=2)


def test_dp_prior_sampler_matches_its_pmf():
    y = np.array([4, 1, 0])
    a = minimum_prior(5, 2.0)
    domain = dipsy.Domain.from_sizes({"x": 3})
    outputs = compositions(5, 3)
    index = {tuple(o): k for k, o in enumerate(outputs)}
    observed = np.zeros(len(outputs))
    from dipsy.methods.dp_prior import DPPrior
    from dipsy.privacy import PureDP

    mechanism = DPPrior(PureDP(2.0)).plan(5, domain).measurements[0].mechanism
    rand = Randomness.from_seed(3)
    for _ in range(20_000):
        observed[index[tuple(mechanism.randomise(y, rand))]] += 1
    expected = 20_000 * np.exp(dp_prior_log_pmf(a)(outputs, y))
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    wrong = 20_000 * np.exp(dp_prior_log_pmf(2 * a)(outputs, y))
    assert stats.chisquare(observed, wrong).pvalue < 1e-3


# -- gamma-Poisson (after Quick 2019) -------------------------------------------------------------

EXPOSURES = np.array([1.0, 3.0, 10.0])


def gamma_poisson_log_pmf(rate: float, strength: float, exposures: np.ndarray = EXPOSURES, conditional: bool = True):
    """log p(y* | y): independent negative binomials, conditioned on their total when asked."""
    q = (1 + strength) / (2 + strength)  # R/(R + E) with R = E + b = (1 + c) E

    def log_pmf(outputs: np.ndarray, y: np.ndarray) -> np.ndarray:
        shape = y + strength * rate * exposures
        joint = stats.nbinom.logpmf(outputs, shape, q).sum(axis=-1)
        return joint - logsumexp(joint) if conditional else joint

    return log_pmf


@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_gamma_poisson_bound_holds_at_the_least_strength_and_fails_below(n, epsilon):
    rate = 0.2
    c = least_strength(n, epsilon, rate, EXPOSURES)
    assert largest_privacy_loss(gamma_poisson_log_pmf(rate, c), n, 3) <= epsilon + 1e-9
    assert largest_privacy_loss(gamma_poisson_log_pmf(rate, 0.5 * c), n, 3) > epsilon


def test_gamma_poisson_without_the_total_is_not_private_at_any_epsilon():
    """Unconditionally the ratio grows with y*: no finite ε bounds it."""
    c = least_strength(3, 1.0, 0.2, EXPOSURES)
    log_pmf = gamma_poisson_log_pmf(0.2, c, conditional=False)
    y, x = np.array([2, 1, 0]), np.array([1, 1, 1])
    losses = [float(log_pmf(np.array([[k, 0, 0]]), y)[0] - log_pmf(np.array([[k, 0, 0]]), x)[0]) for k in (10, 100, 1000, 10_000)]
    assert all(b > a for a, b in zip(losses, losses[1:])) and losses[-1] > 5


@pytest.fixture
def deaths(tmp_path):
    data = pd.DataFrame({"county": np.repeat(["A", "B", "C"], [3, 1, 2])})
    exposures = tmp_path / "exposures.csv"
    pd.DataFrame({"county": ["A", "B", "C"], "exposure": EXPOSURES}).to_csv(exposures, index=False)
    domain = dipsy.Domain((dipsy.Column("county", "categorical", categories=("A", "B", "C")),))
    return data, domain, exposures


def test_gamma_poisson_sampler_matches_the_conditional_predictive(deaths):
    data, domain, exposures = deaths
    from dipsy.methods.gamma_poisson import GammaPoisson
    from dipsy.privacy import PureDP

    synth = GammaPoisson(PureDP(1.0), options={"exposures": str(exposures)})
    plan = synth.plan(6, domain)
    y = NumpyEngine(data, domain).contingency(domain.names, form="dense").counts
    mechanism = plan.measurements[0].mechanism
    outputs = compositions(6, 3)
    index = {tuple(o): k for k, o in enumerate(outputs)}
    observed = np.zeros(len(outputs))
    rand = Randomness.from_seed(11)
    for _ in range(20_000):
        observed[index[tuple(mechanism.randomise(y, rand))]] += 1
    rate, strength = plan.parameters["rate"], plan.parameters["strength"]
    expected = 20_000 * np.exp(gamma_poisson_log_pmf(rate, strength)(outputs, np.array([3, 1, 2])))
    keep = expected >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    assert plan.parameters["rate"] == pytest.approx(6 / EXPOSURES.sum())
    assert plan.parameters["min_prior_shape"] == pytest.approx(6 / math.expm1(1.0))


def test_gamma_poisson_needs_every_exposure(deaths, tmp_path):
    data, domain, _ = deaths
    with pytest.raises(DipsyError, match="exposures"):
        dipsy.synthesize(data, domain, method="gamma-poisson", epsilon=1.0)
    partial = tmp_path / "partial.csv"
    pd.DataFrame({"county": ["A", "B"], "exposure": [1, 2]}).to_csv(partial, index=False)
    with pytest.raises(DipsyError, match="every cell exactly once"):
        dipsy.synthesize(data, domain, method="gamma-poisson", epsilon=1.0, options={"exposures": str(partial)})


def test_ct_demo_runs(tmp_path, capsys):
    from dipsy.cli import main

    ex = ROOT / "examples" / "ct_deaths"
    code = main(
        [
            "synth",
            str(ex / "deaths.csv"),
            "--domain",
            str(ex / "domain.yaml"),
            "--method",
            "gamma-poisson",
            "--columns",
            "county",
            "--epsilon",
            "1",
            "--on-invalid",
            "drop",
            "--option",
            f"exposures={ex / 'populations.csv'}",
            "--release",
            "table",
            "--seed",
            "1",
            "--accept-noise",
            "--out",
            str(tmp_path / "rel"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    table = pd.read_parquet(tmp_path / "rel" / "table_1.parquet")
    assert len(table) == 8 and table["count"].sum() == pd.read_csv(ex / "deaths.csv")["county"].notna().sum()


# -- Laplace sanitizer -------------------------------------------------------------------------------

ADULT = ROOT / "tests" / "data"


@pytest.fixture(scope="module")
def adult():
    return pd.read_csv(ADULT / "adult.csv"), dipsy.Domain.load(ADULT / "adult-domain.json")


@pytest.mark.parametrize("neighbouring, scale", [("substitute", Fraction(2)), ("add-remove", Fraction(1))])
def test_sanitizer_table_is_the_true_table_plus_exact_noise_labelled_in_domain_order(adult, neighbouring, scale):
    data, domain = adult
    columns = ["race", "sex", "income>50K"]
    release = dipsy.synthesize(
        data,
        domain,
        method="laplace-sanitizer",
        epsilon=1.0,
        columns=columns,
        seed=4,
        release="table",
        neighbouring=neighbouring,
        options={"post": "raw"},
    )
    table = release.tables[0]
    truth = NumpyEngine(data, domain.project(columns)).contingency(columns).dense().ravel()
    noise = discrete_laplace(scale, truth.size, Randomness.from_seed(4))
    assert table["count"].tolist() == (truth + noise).tolist()
    expected_cells = [(r, s, i) for r in range(5) for s in range(2) for i in range(2)]
    assert list(zip(table["race"], table["sex"], table["income>50K"])) == expected_cells
    meta = release.metadata()
    assert meta["parameters"]["noise"]["scale"] == str(scale)
    assert meta["parameters"]["noise"]["variance"] == pytest.approx(discrete_laplace_variance(scale))
    assert meta["cells"]["columns"]["race"] == ["0", "1", "2", "3", "4"]
    assert ("n" in meta["parameters"]) == (neighbouring == "substitute")


def test_sanitizer_thresholds_negatives(adult):
    data, domain = adult
    release = dipsy.synthesize(
        data, domain, method="laplace-sanitizer", epsilon=0.05, columns=["native-country", "race"], seed=2, release="table"
    )
    counts = release.tables[0]["count"]
    assert (counts >= 0).all() and (counts == 0).sum() > 50  # many empty cells would have gone negative


@pytest.mark.parametrize("neighbouring, scale", [("substitute", Fraction(2)), ("add-remove", Fraction(1))])
def test_sanitizer_records_replicate_the_thresholded_noisy_table(adult, neighbouring, scale):
    """Bowen & Liu's release (S-003 §4.1): the records' cell counts are max(ñ_k, 0) themselves, so
    their number is the noisy total, all of ε goes to the table, and n is neither used nor stated."""
    data, domain = adult
    columns = ["workclass", "sex"]
    release = dipsy.synthesize(
        data, domain, method="laplace-sanitizer", epsilon=1.0, columns=columns, seed=7, neighbouring=neighbouring
    )
    truth = NumpyEngine(data, domain.project(columns)).contingency(columns).dense().ravel()
    expected = np.maximum(truth + discrete_laplace(scale, truth.size, Randomness.from_seed(7)), 0)
    records = release.tables[0]
    cells = np.ravel_multi_index([records[c].to_numpy() for c in columns], domain.project(columns).shape())
    assert np.bincount(cells, minlength=truth.size).tolist() == expected.tolist()
    assert len(records) == expected.sum() != len(data)
    assert [s.budget.epsilon for s in release.spends] == pytest.approx([1.0])
    assert "n = " not in " ".join(release.statement.public)
    assert "n" not in release.metadata()["parameters"] and "replicate" in release.metadata()["parameters"]["records"]


def test_sanitizer_redraw_keeps_n_rows_or_a_noisy_n(adult):
    data, domain = adult
    columns = ["workclass", "sex"]
    redraw = {"records": "redraw"}
    sub = dipsy.synthesize(data, domain, method="laplace-sanitizer", epsilon=1.0, columns=columns, seed=1, options=redraw)
    assert len(sub.tables[0]) == len(data)
    assert f"n = {len(data)} (the number of rows)" in sub.statement.public
    add = dipsy.synthesize(
        data, domain, method="laplace-sanitizer", epsilon=1.0, columns=columns, seed=1, neighbouring="add-remove", options=redraw
    )
    assert abs(len(add.tables[0]) - len(data)) < 200  # scale 1/0.1 = 10: |noise| < 200 has probability ~1 - 2e-9
    assert [s.budget.epsilon for s in add.spends] == pytest.approx([0.9, 0.1])
    assert "n = " not in " ".join(add.statement.public)


def test_sanitizer_redraw_adds_multinomial_noise_to_the_replicated_counts():
    """Same noisy table, two record releases: replicate's counts are the table; redraw's are a
    Multinomial(n, table/Σ table) draw around it, with variance n p (1 − p) per cell."""
    from dipsy.methods.laplace_sanitizer import SanitizerModel

    table = np.array([4000, 3000, 2000, 1000])
    rand = Randomness.from_seed(3)
    replicate = SanitizerModel(("a",), (4,), (table,), None, "threshold")
    assert replicate.counts(0, rand).tolist() == table.tolist()
    redraw = SanitizerModel(("a",), (4,), (table,), 10_000, "threshold", redraw=True)
    draws = np.array([redraw.counts(0, rand) for _ in range(400)])
    assert (draws.sum(axis=1) == 10_000).all()
    p = table / table.sum()
    variance = draws.var(axis=0, ddof=1) / (10_000 * p * (1 - p))
    assert np.all((variance > 0.75) & (variance < 1.3))  # 399 df: the ratio's sd is 0.07


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sets": 2}, "single set"),
        ({"options": {"post": "raw"}}, "post=raw"),
        ({"options": {"total_share": 1.5}}, "total_share"),
        ({"options": {"records": "resample"}}, "records='resample'"),
        ({"neighbouring": "sideways"}, "unknown neighbouring"),
    ],
)
def test_sanitizer_refuses_what_it_cannot_do(adult, kwargs, message):
    data, domain = adult
    with pytest.raises(DipsyError, match=message):
        dipsy.synthesize(data, domain, method="laplace-sanitizer", epsilon=1.0, columns=["sex"], **kwargs)


def test_posterior_methods_are_private_under_substitution_only():
    data = pd.DataFrame({"x": [0, 1]})
    with pytest.raises(DipsyError, match="substitute neighbours only"):
        dipsy.synthesize(data, dipsy.Domain.from_sizes({"x": 2}), epsilon=1.0, neighbouring="add-remove")
