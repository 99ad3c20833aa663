"""The pseudo-posterior mechanism: its models, weights, Lipschitz bounds, range standards and statement."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

jax = pytest.importorskip("jax", reason="JAX is not installed: `make test` installs it with the project")
numpyro = pytest.importorskip("numpyro", reason="NumPyro is not installed: `make test` installs it with the project")

import dipsy  # noqa: E402
from dipsy.errors import BudgetError, DipsyError, PrivacyError  # noqa: E402
from dipsy.methods.pseudo_posterior import mechanism  # noqa: E402
from dipsy.methods.pseudo_posterior.mechanism import Fit, MCMCSettings, Sampler, release_draws, weighted_model  # noqa: E402
from dipsy.methods.pseudo_posterior.models import MODELS  # noqa: E402
from dipsy.privacy import Ledger, PureDP, Spend  # noqa: E402
from dipsy.privacy.budget import ApproxDP, LocalDP  # noqa: E402
from dipsy.privacy.composition import total_as  # noqa: E402
from dipsy.privacy.relation import ADD_REMOVE  # noqa: E402

from conftest import CE_DATA, CE_DOMAIN  # noqa: E402

SMALL = MCMCSettings(chains=2, warmup=300, draws=300)


def simulation(n: int, seed: int):
    """S-001's design: x ~ N(2, 1), y ~ Lognormal(x + 1, 1)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(2, 1, n)
    return np.column_stack([np.ones(n), x]), np.exp(rng.normal(x + 1, 1))


@pytest.fixture(scope="module")
def fitted():
    X, y = simulation(400, 1)
    sampler = Sampler(MODELS["lognormal"](), X, y, SMALL)
    return sampler, sampler.fit(np.ones(len(y)), jax.random.PRNGKey(0))


# -- the models' log-likelihoods and range masses, against SciPy ---------------------------------


def _theta(name: str, p: int, rng):
    theta = {"beta": rng.normal(0, 0.3, p)}
    if name in ("normal", "lognormal"):
        theta["sigma"] = np.array(rng.uniform(0.5, 2))
    if name == "negative-binomial":
        theta["phi"] = np.array(rng.uniform(0.5, 5))
    return theta


@pytest.mark.parametrize("name", ["normal", "lognormal", "poisson", "negative-binomial"])
def test_log_likelihood_and_range_mass_match_scipy(name):
    rng = np.random.default_rng(3)
    model, X = MODELS[name](), np.column_stack([np.ones(50), rng.normal(0, 1, 50)])
    theta = _theta(name, 2, rng)
    eta = X @ theta["beta"]
    y = {"normal": rng.normal(eta, 1), "lognormal": np.exp(rng.normal(eta, 1)), "poisson": rng.poisson(np.exp(eta)).astype(float),
         "negative-binomial": rng.poisson(np.exp(eta) * 2).astype(float)}[name]
    if name == "normal":
        law = stats.norm(eta, theta["sigma"])
    elif name == "lognormal":
        law = stats.lognorm(s=theta["sigma"], scale=np.exp(eta))
    elif name == "poisson":
        law = stats.poisson(np.exp(eta))
    else:
        phi, mu = theta["phi"], np.exp(eta)
        law = stats.nbinom(phi, phi / (phi + mu))
    discrete = name in ("poisson", "negative-binomial")
    expected = law.logpmf(y) if discrete else law.logpdf(y)
    assert np.allclose(np.asarray(model.log_likelihood(theta, X, y)), expected, rtol=1e-9, atol=1e-9)
    lo, hi = 0.6 * np.abs(y) * np.sign(y), 1.2 * np.abs(y) * np.sign(y)
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    if discrete:
        mass = law.cdf(np.floor(hi)) - law.cdf(np.ceil(lo) - 1)
    else:
        mass = law.cdf(hi) - law.cdf(lo)
    got = np.exp(np.asarray(model.log_interval(theta, X, lo, hi)))
    keep = mass > 1e-12
    assert np.allclose(got[keep], mass[keep], rtol=1e-7, atol=1e-12)


def test_categorical_log_likelihood_is_the_log_softmax():
    rng = np.random.default_rng(4)
    model, X = MODELS["categorical"](3), np.column_stack([np.ones(20), rng.normal(0, 1, 20)])
    B = rng.normal(0, 1, (2, 2))
    y = rng.integers(0, 3, 20)
    eta = np.column_stack([np.zeros(20), X @ B])
    expected = eta[np.arange(20), y] - np.log(np.exp(eta).sum(axis=1))
    assert np.allclose(np.asarray(model.log_likelihood({"B": B}, X, y)), expected)
    draws = np.array([model.predict({"B": B}, X[:1], np.random.default_rng(k))[0] for k in range(4000)])
    p = np.exp(eta[0] - eta[0].max()) / np.exp(eta[0] - eta[0].max()).sum()
    assert stats.chisquare(np.bincount(draws.astype(int), minlength=3), 4000 * p).pvalue > 1e-4


def test_far_tail_range_masses_do_not_underflow():
    model = MODELS["normal"]()
    theta = {"beta": np.array([0.0]), "sigma": np.array(1.0)}
    got = float(model.log_interval(theta, np.ones((1, 1)), np.array([30.0]), np.array([31.0]))[0])
    assert np.isclose(got, stats.norm.logsf(30.0), rtol=1e-6)  # the mass above 31 is negligible beside it


# -- the weighted likelihood and the bounds --------------------------------------------------------


def test_the_weighted_log_density_is_the_prior_plus_the_weighted_sum_of_log_likelihoods():
    from numpyro.infer.util import log_density

    X, y = simulation(30, 2)
    alpha = np.random.default_rng(5).uniform(0, 1, 30)
    theta = {"beta": np.array([1.1, 0.9]), "sigma": np.array(1.3)}
    got, _ = log_density(lambda: weighted_model(MODELS["lognormal"](), X, y, alpha), (), {}, theta)
    by_hand = (stats.norm(0, 10).logpdf(theta["beta"]).sum() + stats.halfnorm(scale=5).logpdf(1.3)
               + np.sum(alpha * stats.lognorm(s=1.3, scale=np.exp(X @ theta["beta"])).logpdf(y)))
    assert np.isclose(float(got), by_hand, rtol=1e-10)


def test_lipschitz_bounds_over_the_draws_match_a_direct_evaluation(fitted):
    sampler, fit = fitted
    F = sampler.log_likelihood(fit)
    assert F.shape == (fit.size, 400)
    beta, sigma = fit.draws["beta"], fit.draws["sigma"]
    direct = stats.lognorm(s=sigma[:, None], scale=np.exp(beta @ sampler.X.T.__array__())).logpdf(np.asarray(sampler.y)[None, :])
    assert np.allclose(F, direct, rtol=1e-9, atol=1e-9)
    assert np.allclose(mechanism.lipschitz(F), np.abs(direct).max(axis=0))
    alpha = mechanism.weights(mechanism.lipschitz(F))
    delta, per = mechanism.database_bound("adp", alpha, F)
    assert delta == pytest.approx(np.max(np.abs(alpha[None, :] * direct)))
    L = sampler.log_range_mass(fit, 0.6, 1.2)
    s, i = 7, 11
    mass = stats.lognorm(s=sigma[s], scale=np.exp(beta[s] @ np.asarray(sampler.X[i])))
    y = float(sampler.y[i])
    assert np.exp(L[s, i]) == pytest.approx(mass.cdf(1.2 * y) - mass.cdf(0.6 * y), rel=1e-8)
    lam = mechanism.outside_probability(L)
    assert np.all((0 <= lam) & (lam <= 1)) and lam[i] == pytest.approx(1 - np.mean(np.exp(L[:, i])))


def test_weights_lie_in_zero_one_and_fall_with_risk():
    risk = np.random.default_rng(6).gamma(2, 2, 500)
    for rule in ("linear", "lipschitz"):
        a = mechanism.weights(risk, rule)
        assert np.all((0 <= a) & (a <= 1)) and np.all(np.diff(a[np.argsort(risk)]) <= 1e-12)
    raised = mechanism.weights(risk, "lipschitz", raise_to=float(np.max(mechanism.weights(risk, "lipschitz") * risk)))
    assert np.all(raised >= mechanism.weights(risk, "lipschitz") - 1e-12)
    assert np.max(raised * risk) == pytest.approx(np.max(mechanism.weights(risk, "lipschitz") * risk))


def test_range_standards_lower_the_bound_on_the_simulation():
    """S-001: both range standards lower Δ (the budget) relative to aDP, on its simulated design."""
    X, y = simulation(2000, 7)
    sampler = Sampler(MODELS["lognormal"](), X, y, SMALL)
    unweighted = sampler.fit(np.ones(len(y)), jax.random.PRNGKey(1))
    key = jax.random.PRNGKey(2)
    adp = release_draws(sampler, 2, key, "adp", unweighted=unweighted)
    for a, b in ((0.4, 1.8), (0.6, 1.2)):
        truncated = release_draws(sampler, 2, key, "truncated", a, b, unweighted=unweighted)
        averaged = release_draws(sampler, 2, key, "averaged", a, b, unweighted=unweighted)
        assert truncated.delta <= adp.delta and averaged.delta <= adp.delta, (a, b, adp.delta, truncated.delta, averaged.delta)
        assert averaged.delta < truncated.delta
        assert np.all(averaged.effective >= averaged.alpha)  # only the sensitive share is down-weighted


def test_fits_that_do_not_converge_are_refused_or_warned():
    draws = {"beta": np.zeros((10, 2))}
    with pytest.raises(DipsyError, match="divergent transitions"):
        mechanism.check_fit(Fit(draws, 1.0, 500.0, 3, 0.0), "weighted")
    with pytest.raises(DipsyError, match="did not converge"):
        mechanism.check_fit(Fit(draws, 1.2, 500.0, 0, 0.0), "weighted")
    with pytest.raises(DipsyError, match="did not converge"):
        mechanism.check_fit(Fit(draws, 1.0, 20.0, 0, 0.0), "weighted")
    assert mechanism.check_fit(Fit(draws, 1.02, 500.0, 0, 0.0), "weighted") == ["the weighted fit's max split R-hat is 1.020 (> 1.01)"]
    assert mechanism.check_fit(Fit(draws, 1.001, 500.0, 0, 0.0), "weighted") == []


# -- the statement, the ledger, bad input ------------------------------------------------------------

CE_OPTIONS = {"response": "log(Expenditure)", "predictors": "log(Income),UrbanRural", "chains": 2, "warmup": 300, "draws": 300}
CE_COLUMNS = ["Expenditure", "Income", "UrbanRural"]


@pytest.fixture(scope="module")
def ce_release(tmp_path_factory):
    ledger = tmp_path_factory.mktemp("ppm") / "ledger.sqlite"
    release = dipsy.synthesize(CE_DATA, CE_DOMAIN, method="pseudo-posterior", columns=CE_COLUMNS, sets=2,
                               options={**CE_OPTIONS, "range": "0.6,1.2", "standard": "averaged"}, ledger=ledger, dataset_id="ce")
    return release, ledger


def test_the_statement_is_local_never_dp(ce_release):
    release, ledger = ce_release
    s = release.statement
    assert s.definition == "local" and s.guarantee == "local" and isinstance(s.total, LocalDP)
    d = json.loads(json.dumps(s.to_dict(), default=str))
    assert d["differentially_private"] is False and d["guarantee"].startswith("local, asymptotic")
    ppm = d["measurements"][-1]
    assert s.total.epsilon == pytest.approx(2 * 2 * ppm["noise"]["Delta"])  # 2 sets × 2Δ
    assert ppm["noise"]["epsilon_x_per_draw"] == pytest.approx(2 * ppm["noise"]["Delta"])
    assert ppm["noise"]["Delta"] < ppm["noise"]["Delta_without_range"]
    assert d["reveals"] and "local to this data set" in d["neighbouring"] and "0.6" in d["neighbouring"]
    assert release.parameters["mcmc"]["chains"] == 2 and release.parameters["standard"] == "averaged"
    rows = Ledger(ledger).spends("ce")
    assert {r["guarantee"] for r in rows} == {"local"} and Ledger(ledger).totals()[0].local == 1


def test_the_release_repeats_the_predictors_and_draws_the_response_within_bounds(ce_release):
    release, _ = ce_release
    original = pd.read_csv(CE_DATA)
    for table in release.tables:
        assert list(table.columns) == CE_COLUMNS and len(table) == len(original)
        assert np.array_equal(table["Income"].to_numpy(), original["Income"].to_numpy())
        assert np.array_equal(table["UrbanRural"].to_numpy(), original["UrbanRural"].to_numpy())
        assert table["Expenditure"].between(0, 100000).all()
        assert not np.array_equal(table["Expenditure"].to_numpy(), original["Expenditure"].to_numpy())
    # the synthetic log expenditure follows the original's location and spread
    syn, orig = np.log(release.tables[0]["Expenditure"]), np.log(original["Expenditure"])
    assert abs(syn.mean() - orig.mean()) < 0.15 and abs(syn.std() - orig.std()) < 0.2


def test_a_local_guarantee_never_counts_against_a_dp_cap(tmp_path):
    with pytest.raises(BudgetError, match="never counts against a DP"):
        total_as(PureDP(10.0), [PureDP(1.0), LocalDP(0.5)])
    with pytest.raises(BudgetError):
        total_as(LocalDP(10.0), [LocalDP(1.0), PureDP(0.5)])
    assert total_as(LocalDP(10.0), [LocalDP(1.0), LocalDP(0.5)]) == LocalDP(1.5)
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.reserve("ds", "dp-1", "laplace-sanitizer", [Spend("dp", PureDP(0.5))], ADD_REMOVE, cap=ApproxDP(1.0, 1e-6))
    with pytest.raises(BudgetError, match="cannot be recorded as a DP spend"):
        ledger.reserve("ds", "ppm-1", "pseudo-posterior", [Spend("ppm", LocalDP(50.0))], ADD_REMOVE)
    ledger.reserve("ds", "ppm-2", "pseudo-posterior", [Spend("ppm", LocalDP(50.0))], ADD_REMOVE, guarantee="local")
    total = ledger.totals()[0]
    assert total.spent.epsilon == pytest.approx(0.5) and total.local == 1


def test_a_local_release_past_its_ceiling_is_refused_and_nothing_recorded(tmp_path):
    ledger = tmp_path / "l.sqlite"
    with pytest.raises(PrivacyError, match="past the ceiling"):
        dipsy.synthesize(CE_DATA, CE_DOMAIN, method="pseudo-posterior", columns=CE_COLUMNS, epsilon=0.01,
                         options=CE_OPTIONS, ledger=ledger, dataset_id="ce")
    assert not Ledger(ledger).spends("ce")


def test_a_data_dependent_cost_is_refused_in_a_dp_session():
    from dipsy.privacy.measurement import Measurement, Total
    from dipsy.privacy.rng import Randomness
    from dipsy.privacy.session import Session
    from dipsy.methods.pseudo_posterior.synthesizer import PseudoPosterior

    m = Measurement("local", Total(), PseudoPosterior(None), ADD_REMOVE)
    session = Session(object(), PureDP(1.0), ADD_REMOVE, Randomness.from_seed(1), (m,))
    with pytest.raises(PrivacyError, match="only a local guarantee"):
        session.measure(m)


@pytest.mark.parametrize("options, match", [
    ({"range": "1.2,1.8"}, "0 < a < 1 < b"),
    ({"range": "0.4,0.9"}, "0 < a < 1 < b"),
    ({"range": "0.4"}, "range must be"),
    ({"standard": "averaged"}, "applies to a sensitive range"),
    ({"model": "weibull"}, "unknown model"),
    ({"response": "Race"}, "not a column in scope"),
    ({"predictors": "log(Income)"}, "neither the response nor a predictor"),
    ({"response": "log(UrbanRural)", "predictors": "log(Income),Expenditure"}, "log scale"),
    ({"response": "UrbanRural", "model": "normal", "predictors": "log(Income),Expenditure"}, "does not fit"),
    ({"response": "log(Expenditure)", "model": "lognormal"}, "log scale"),
    ({"predictors": "Expenditure"}, "cannot also be a predictor"),
    ({"weights": "square"}, "must be one of"),
])
def test_bad_options_are_refused_before_any_read(options, match):
    with pytest.raises(DipsyError, match=match):
        dipsy.synthesize(CE_DATA, CE_DOMAIN, method="pseudo-posterior", columns=CE_COLUMNS, options={**CE_OPTIONS, **options})


def test_non_positive_values_for_a_lognormal_model_are_refused(tmp_path):
    data = pd.read_csv(CE_DATA)[CE_COLUMNS].head(50)
    data.loc[3, "Expenditure"] = 0.0
    for options in ({"response": "Expenditure", "model": "lognormal"}, {"response": "log(Expenditure)"}):
        with pytest.raises(DipsyError, match="> 0"):
            dipsy.synthesize(data, CE_DOMAIN, method="pseudo-posterior", columns=CE_COLUMNS, options={**CE_OPTIONS, **options})


def test_a_users_own_model_from_a_file(tmp_path):
    path = tmp_path / "mymodel.py"
    path.write_text(
        "import jax.numpy as jnp, numpyro, numpyro.distributions as dist\n"
        "from dipsy.methods.pseudo_posterior.models import RecordModel\n"
        "class Laplace(RecordModel):\n"
        "    def prior(self, p):\n"
        "        return {'beta': numpyro.sample('beta', dist.Normal(0, 10).expand([p]).to_event(1)),\n"
        "                'b': numpyro.sample('b', dist.HalfNormal(5.0))}\n"
        "    def log_likelihood(self, theta, X, y):\n"
        "        return -jnp.log(2 * theta['b']) - jnp.abs(y - X @ theta['beta']) / theta['b']\n"
        "    def predict(self, theta, X, rng):\n"
        "        return rng.laplace(X @ theta['beta'], theta['b'])\n")
    release = dipsy.synthesize(CE_DATA, CE_DOMAIN, method="pseudo-posterior", columns=CE_COLUMNS, seed=3,
                               options={**CE_OPTIONS, "model": f"{path}:Laplace"})
    assert release.options["model"]["file"] == "mymodel.py" and release.options["model"]["name"] == "Laplace"
    assert str(tmp_path) not in json.dumps(release.metadata(), default=str)  # never the operator's path
    assert release.statement.guarantee == "test"  # seeded
    assert release.statement.to_dict()["if_unseeded"]["definition"] == "local"


def test_compare_shows_the_local_guarantee_apart_from_dp(ce_release, tmp_path):
    from dipsy.evaluation.compare import compare_releases, load_column, write_comparison

    release, ledger = ce_release
    local = release.save(tmp_path / "ppm")
    dp = dipsy.synthesize(CE_DATA, CE_DOMAIN, method="perturbed-histogram", columns=["Expenditure"], epsilon=1.0,
                          ledger=ledger, dataset_id="ce").save(tmp_path / "hist")
    result = compare_releases(CE_DATA, [local, dp], "Expenditure")
    ppm, hist = result["releases"]
    assert ppm["kind"] == "local" and "not DP" in ppm["guarantee"] and "ε_x" in ppm["guarantee"]
    assert ppm["epsilon"] == pytest.approx(release.statement.total.epsilon) and hist["kind"] == "dp"
    page = write_comparison(result, *load_column(CE_DATA, [local, dp], "Expenditure"), tmp_path / "c.html").read_text(encoding="utf-8")
    assert "Guarantees of different kinds" in page
