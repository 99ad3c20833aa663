"""The Bowen & Liu benchmark's inference rules (benchmarks/bowen_liu.py): what makes a repetition usable,
and the Laplace sanitizer's release as the paper makes it."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import bowen_liu as B  # noqa: E402 - a script, not a package

sys.path.remove(str(ROOT / "benchmarks"))


def test_a_repeat_is_usable_when_its_combined_variance_exists():
    """The paper's rule (supp. Table 1): a set with θ̂ = 0 among others does not make the repeat unusable;
    only sets that all agree on 0 (or all on n) leave no variance."""
    s = np.array(
        [
            [0, 3, 5, 0, 2, 1, 0, 4, 2, 1],  # some sets empty: T > 0
            [0] * 10,  # every set empty: T = 0
            [2] * 10,
        ]
    )  # all equal and inside: b = 0, but ū > 0
    r = B.multiple(s, 40)
    assert r["usable"].tolist() == [True, False, True]
    assert r["usable_every_set"].tolist() == [False, False, True]
    row = B.summarise(r, 0.05, -10.0)
    assert row["usable"] == pytest.approx(2 / 3) and row["usable_every_set"] == pytest.approx(1 / 3)
    assert row["n_usable"] == 2
    assert B.summarise(r, 0.05, -10.0, "every-set")["n_usable"] == 1


def test_the_laplace_sanitizer_releases_the_noisy_count_itself():
    """LS at a large ε: s* = s, so its estimate and interval are the original data's; the redraw adds a
    Binomial(n, s*/n) layer and does not."""
    rand = B.Randomness.from_seed(5)
    rows = B.study1_scenario(1000, 0.5, 400, rand)
    at = {name: next(r for r in series if r["log_epsilon"] == 4) for name, series in rows.items()}
    assert at["LS"]["rmse"] == pytest.approx(at["Ori"]["rmse"], rel=0.02)
    assert at["LS"]["coverage"] == pytest.approx(at["Ori"]["coverage"], abs=0.02)
    assert at["LS-redraw"]["rmse"] / at["Ori"]["rmse"] == pytest.approx(math.sqrt(2), rel=0.15)


@pytest.mark.parametrize("n, theta, log_eps", [(40, 0.25, -5), (1000, 0.1, -6)])
def test_the_exact_usable_probability_matches_the_simulation(n, theta, log_eps):
    rand = B.Randomness.from_seed(11)
    s = rand.numpy.binomial(n, theta, 20_000)
    noisy = s + B.discrete_laplace(math.exp(-log_eps), s.size, rand)
    p = B.usable_probability(n, theta, math.exp(log_eps))
    assert np.mean((noisy > 0) & (noisy < n)) == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / s.size))
