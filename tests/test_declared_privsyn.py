"""privsyn with declared analyses: their pairs (and a multi-column analysis's whole table) measured first at the steward's share, the rest as
before, the total unchanged; the declared relationship kept closer than without the declaration."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import dipsy
from dipsy.domain import Domain
from dipsy.domain.analyses import Analysis
from dipsy.methods import get
from dipsy.privacy import ZCDP

BASE = Domain.from_sizes({"a": 4, "b": 4, "c": 4, "e": 4, "x": 4, "y": 2})
DECLARED = dataclasses.replace(BASE, analyses=(Analysis("y ~ C(x)"), Analysis("y ~ C(x) + C(a)")))


def generated(n: int, seed: int) -> pd.DataFrame:
    """a → b → c → e strongly dependent (what privsyn's selection prefers), y on x moderately, x apart."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = (b + (rng.random(n) < 0.1)) % 4
    e = (c + (rng.random(n) < 0.1)) % 4
    x = rng.integers(0, 4, n)
    y = (rng.random(n) < 0.2 + 0.15 * x).astype(int)
    return pd.DataFrame({"a": a, "b": b, "c": c, "e": e, "x": x, "y": y})


@pytest.mark.parametrize("sets", [1, 2])
def test_the_declared_pairs_take_their_share_and_the_total_stays_rho(sets):
    rho = 0.6
    plan = get("privsyn")(ZCDP(rho), sets).plan(None, DECLARED)
    declared = [m for m in plan.measurements if "declared analysis" in m.label]
    # the pairs, then the whole table of the analysis naming two columns besides y (its sufficient statistic)
    assert [m.query.columns for m in declared] == [("y", "x"), ("y", "a"), ("y", "x", "a")] * sets
    assert all(m.published for m in declared)
    share = 0.25  # the default with analyses declared
    assert sum(m.cost.rho for m in declared) == pytest.approx(share * rho, rel=1e-3)  # σ² rounded up: at most
    assert sum(m.cost.rho for m in declared) <= share * rho
    assert plan.declared(ZCDP(rho)).rho == pytest.approx(rho, rel=1e-3) and plan.declared(ZCDP(rho)).rho <= rho
    assert plan.parameters["declared_pairs"] == [["y", "x"], ["y", "a"]] and plan.parameters["analysis_share"] == share
    assert plan.parameters["declared_tables"] == [["y", "x", "a"]]
    plain = get("privsyn")(ZCDP(rho), sets).plan(None, BASE)
    assert not [m for m in plain.measurements if "declared analysis" in m.label] and "declared_pairs" not in plain.parameters
    # the one-way marginals of the rest are measured at (1 − share) of their budget without analyses
    one, one_plain = (next(m for m in p.measurements if "one-way marginal a," in m.label) for p in (plan, plain))
    assert one.cost.rho == pytest.approx(one_plain.cost.rho * (1 - share), rel=1e-3)


def test_a_share_of_zero_is_the_release_without_analyses():
    df = generated(600, 1)
    kwargs = dict(epsilon=1.0, delta=1e-9, seed=4, ledger=False)
    zero = dipsy.synthesize(df, DECLARED, "privsyn", options={"iterations": 5, "analysis_share": 0}, **kwargs)
    plain = dipsy.synthesize(df, BASE, "privsyn", options={"iterations": 5}, **kwargs)
    pd.testing.assert_frame_equal(zero.tables[0], plain.tables[0])
    assert zero.statement.to_dict() == plain.statement.to_dict()


def test_the_statement_lists_them_and_the_declared_relationship_is_kept_closer():
    def conditional(df: pd.DataFrame) -> np.ndarray:
        return df.groupby("x")["y"].mean().reindex(range(4)).to_numpy()

    errors = {"plain": [], "declared": []}
    for seed in range(4):
        df = generated(3000, seed)
        for name, domain in (("plain", BASE), ("declared", DECLARED)):
            release = dipsy.synthesize(
                df, domain, "privsyn", epsilon=1.0, delta=1e-9, seed=seed, ledger=False, options={"iterations": 20}
            )
            errors[name].append(np.abs(conditional(release.tables[0]) - conditional(df)).mean())
            if name == "declared" and seed == 0:
                labels = [s.label for s in release.spends]
                assert any("declared analysis: two-way marginal y × x" in label for label in labels), labels
    # y's dependence on x, weaker than a → b → c → e's, is measured for sure: P(y | x) about half as far off
    assert np.mean(errors["declared"]) < 0.7 * np.mean(errors["plain"]), errors


def test_the_evaluation_says_which_models_the_release_measured_for(tmp_path, capsys):
    df = generated(600, 2)
    kwargs = dict(epsilon=1.0, delta=1e-9, seed=3, ledger=False, options={"iterations": 5})
    declared = dipsy.synthesize(df, DECLARED, "privsyn", **kwargs)
    plain = dipsy.synthesize(df, BASE, "privsyn", **kwargs)
    # the declared analyses are the models of both evaluations: measured for in the one release only
    # (the report's wording of it: tests/test_noise_aware_report.py)
    ours = dipsy.evaluate(df, declared, DECLARED)["inference"]["models"]
    theirs = dipsy.evaluate(df, plain, DECLARED)["inference"]["models"]
    assert [m["measured_for"] for m in ours] == [True, True] and [m["measured_for"] for m in theirs] == [False, False]
    from dipsy.cli import main

    df.to_csv(tmp_path / "data.csv", index=False)
    for name, release in (("plain", plain), ("declared", declared)):
        release.save(tmp_path / name)
        capsys.readouterr()
        assert main(["evaluate", str(tmp_path / "data.csv"), str(tmp_path / name)]) == 0
        said = capsys.readouterr().out
        assert ("not protected" in said) == (name == "plain"), said
