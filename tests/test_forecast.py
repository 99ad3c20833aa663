"""The forecast of a release's error, from its plan alone (dipsy.forecast)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN

import dipsy
from dipsy.api import plan_forecast
from dipsy.cli import main
from dipsy.domain import Domain
from dipsy.engine import engine_for
from dipsy.errors import NoiseError
from dipsy.forecast import forecast
from dipsy.forecast_noise import SHARE_NOISE, positive_noise
from dipsy.methods import get
from dipsy.privacy import PureDP
from dipsy.privacy.measurement import DiscreteGaussian, DiscreteLaplace
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_gaussian, discrete_laplace


@pytest.mark.parametrize("cells, epsilon, sets", [(6, 5.0, 1), (960, 10.0, 1), (766_080, 5.0, 5), (12, 1.0, 3)])
def test_the_dirichlet_prior_share_is_k_over_k_plus_e_to_the_eps_minus_one(cells, epsilon, sets):
    """With the least prior α = n/(e^(ε/m) − 1) the prior's share is K/(K + e^(ε/m) − 1), whatever n."""
    domain = Domain.from_sizes({"x": cells})
    for n in (100, 10_000):
        plan = get("dirichlet-multinomial")(PureDP(epsilon), sets).plan(n, domain)
        share = forecast(plan, domain).parts[0]["figures"]["prior_share"]
        assert share == pytest.approx(cells / (cells + math.expm1(epsilon / sets)), rel=1e-12)


@pytest.mark.parametrize(
    "mech",
    [
        DiscreteLaplace(Fraction(4, 3)),
        DiscreteLaplace(Fraction(20, 27)),
        DiscreteLaplace(Fraction(50)),
        DiscreteGaussian(Fraction(9, 4)),
        DiscreteGaussian(Fraction(457)),
    ],
)
def test_the_spurious_records_of_an_empty_cell_match_the_samplers(mech):
    """E[max(e, 0)] in closed form (or summed) against 200,000 draws of the exact sampler: within 5 standard errors."""
    rand = Randomness.from_seed(7)
    draws = (
        discrete_laplace(mech.scale, 200_000, rand)
        if isinstance(mech, DiscreteLaplace)
        else discrete_gaussian(mech.sigma2, 200_000, rand)
    )
    positive = np.maximum(draws, 0)
    se = positive.std() / math.sqrt(positive.size)
    assert abs(positive.mean() - positive_noise(mech)) < 5 * se
    assert abs(positive_noise(mech) - 1.05 * positive_noise(mech)) > 5 * se  # the test could tell a 5 % error


def test_the_noisy_table_forecast_bounds_the_spurious_records_measured_on_ce(tmp_path):
    """Laplace sanitizer over all CE columns: records in cells the original leaves empty are pure
    noise. The forecast's bound K·E⁺ holds, and (empty cells)·E⁺ predicts the measured count."""
    domain = Domain.load(CE_DOMAIN)
    original = pd.read_csv(CE_DATA)
    plan = get("laplace-sanitizer")(PureDP(1.0)).plan(len(original), domain)
    part = forecast(plan, domain).parts[0]
    per_cell = part["figures"]["spurious_per_empty_cell"]
    release = dipsy.synthesize(CE_DATA, CE_DOMAIN, method="laplace-sanitizer", epsilon=1.0, release="table", accept_noise=True)
    released = release.tables[0]["count"].to_numpy()  # one row per cell, in the dense table's C order
    engine = engine_for(original, domain, "error")
    counts = np.asarray(engine.contingency(list(domain.names), form="dense").counts)
    assert released.shape == counts.shape
    empty = counts == 0
    spurious = released[empty]
    assert spurious.sum() <= part["figures"]["spurious_at_most"] * 1.1
    # each empty cell's count is max(e, 0): mean E⁺ with the sd of max(e, 0) (from the sampler's law)
    draws = np.maximum(discrete_laplace(plan.measurements[0].mechanism.scale, 100_000, Randomness.from_seed(1)), 0)
    se = draws.std() * math.sqrt(empty.sum())
    assert abs(spurious.sum() - empty.sum() * per_cell) < 5 * se


def test_verdicts_on_the_ce_sample():
    cases = {
        ("dirichlet-multinomial", None, 10.0): "useful",
        ("dirichlet-multinomial", None, 0.5): "noise",
        ("smoothed-histogram", ("Expenditure",), 1.5): "noise",
        ("perturbed-histogram", ("Expenditure",), 1.5): "unknown",  # add/remove: n is not public
        ("modips", ("Expenditure", "Income", "UrbanRural"), 1.5): "noise",
    }
    for (method, columns, epsilon), verdict in cases.items():
        sets = 5 if method in ("modips", "perturbed-histogram") else 1
        got = plan_forecast(CE_DATA, CE_DOMAIN, method, epsilon, sets, columns=columns)
        assert got.verdict == verdict, (method, got.summary())
    declared = plan_forecast(None, CE_DOMAIN, "perturbed-histogram", 1.5, 5, columns=("Expenditure",), rows=994)
    assert declared.verdict == "useful" and any("declared public" in i for i in declared.inputs)


def test_the_forecast_goes_into_the_release_and_a_noise_release_needs_consent(tmp_path, capsys):
    with pytest.raises(NoiseError, match="prior outweighs the data"):
        dipsy.synthesize(CE_DATA, CE_DOMAIN, epsilon=0.5)
    out = tmp_path / "rel"
    code = main(["synth", str(CE_DATA), "--domain", str(CE_DOMAIN), "--epsilon", "0.5", "--out", str(out)])
    assert code == 2 and "--accept-noise" in capsys.readouterr().err and not out.exists()
    code = main(["synth", str(CE_DATA), "--domain", str(CE_DOMAIN), "--epsilon", "0.5", "--out", str(out), "--accept-noise"])
    text = capsys.readouterr().out
    assert code == 0 and "forecast (NOISE)" in text
    meta = json.loads((out / "release.json").read_text())
    assert meta["forecast"]["verdict"] == "noise" and meta["forecast"]["accepted_noise"] is True
    assert meta["forecast"]["parts"][0]["figures"]["prior_share"] >= SHARE_NOISE
    assert "n = 994" in " ".join(meta["forecast"]["public_inputs"])  # public under substitution, and stated


def test_the_plan_command_prints_the_verdict_and_writes_json(tmp_path, capsys):
    path = tmp_path / "f.json"
    code = main(
        [
            "plan",
            str(CE_DATA),
            "--domain",
            str(CE_DOMAIN),
            "--method",
            "smoothed-histogram",
            "--columns",
            "Expenditure",
            "--epsilon",
            "1.5",
            "--json",
            str(path),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0 and "NOISE" in text and "δ = 0.964" in text
    assert json.loads(path.read_text())["verdict"] == "noise"
    code = main(
        ["plan", "--domain", str(CE_DOMAIN), "--method", "smoothed-histogram", "--columns", "Expenditure", "--epsilon", "1.5"]
    )
    assert code == 2 and "needs the data's row count" in capsys.readouterr().err


def test_modips_noise_is_the_sanitizers_own_under_either_post_processing():
    """The sanitizer's scales already hold truncation's doubling (eq. N6): the forecast's noise is
    the sd the mechanism itself states, for thresholding and truncation alike (the forecast once
    doubled it again for truncation)."""
    domain = Domain.load(CE_DOMAIN).project(("Expenditure", "Income", "UrbanRural"))
    seen = set()
    for post in ("threshold", "truncation"):
        plan = get("modips")(PureDP(1.5), 5, {"post": post}).plan(994, domain)
        stated = {c["statistic"]: c["sd"] for c in plan.measurements[0].mechanism.describe()["components"]}
        part = forecast(plan, domain).parts[0]
        name = part["what"].split(": ")[-1]
        figures = part["figures"]
        noise = figures.get("noise_sd_per_cell")
        if noise is None:  # a spread or a mean: per record, so a sum's noise over n
            noise = figures.get("noise_sd_per_record", figures.get("mean_noise_sd"))
            noise *= 994 if ("sum" in name or "cross" in name) else 1
        assert noise == pytest.approx(stated[name], rel=1e-9), (post, name, part)
        seen.add(post)
    assert seen == {"threshold", "truncation"}


def test_privsyn_chosen_marginals_are_weak_when_even_the_smallest_pair_is_mostly_noise():
    """At ρ = 0.01 over 100 rows, the smallest of these pairs (400 cells) at the least noise would gain
    far more spurious records than n: weak, whatever the run chooses; at 10⁶ rows, no verdict."""
    from dipsy.privacy import ZCDP

    domain = Domain.from_sizes({"a": 20, "b": 20, "c": 30})
    plan = get("privsyn")(ZCDP(0.01)).plan(None, domain)
    chosen = lambda rows: next(p for p in forecast(plan, domain, rows=rows).parts if "chosen marginals" in p["what"])  # noqa: E731
    small, large = chosen(100), chosen(10**6)
    f = small["figures"]
    best = 400 * f["spurious_per_empty_cell_at_least_noise"] / (100 + 400 * f["spurious_per_empty_cell_at_least_noise"])
    assert small["verdict"] == "weak" and f["noise_share_at_least"] == pytest.approx(best) and best >= 0.3
    assert "mostly lost" in small["text"]
    assert large["verdict"] == "unknown" and large["figures"]["noise_share_at_least"] < 0.3


@pytest.mark.parametrize("sets", [1, 3])
def test_privsyn_chosen_marginals_get_their_least_noise_and_no_verdict(sets):
    """Whatever the run chooses shares one set's ρ₃: each chosen marginal's noise variance is at
    least θ²/(2ρ₃) (all of ρ₃ on one marginal). Stated, without a verdict (the choice is data)."""
    from dipsy.privacy import ZCDP

    domain = Domain.from_sizes({"a": 4, "b": 5, "c": 6})
    plan = get("privsyn")(ZCDP(0.3), sets).plan(None, domain)
    got = forecast(plan, domain, rows=5000)
    chosen = [p for p in got.parts if "chosen marginals" in p["what"]]
    assert len(chosen) == 1 and chosen[0]["verdict"] == "unknown"
    rho3 = 0.3 * 0.6 / sets  # privsyn's default shares 0.3 / 0.1 / 0.6
    figures = chosen[0]["figures"]
    assert figures["rho_chosen"] == pytest.approx(rho3)
    assert figures["least_noise_sd_per_cell"] == pytest.approx(math.sqrt(1 / (2 * rho3)), rel=1e-2)
    assert figures["pair_cells"] == {"smallest": 20, "median": 24, "largest": 30}
    assert any("depends on its noisy scores" in p["text"] for p in chosen)
