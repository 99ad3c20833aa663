"""The four false statements an outside audit reproduced, each as a test that failed before the
measurement core and passes now; and the randomness a production release draws from.

1. A seeded release claimed ε-DP while publishing its seed: anyone regenerates the noise and
   recovers the true counts. Now a seeded release says it is not private.
2. ``--on-invalid drop`` wrote a data-dependent note into release.json. Now nothing in it depends
   on whether a confidential row was invalid.
3. The ledger added spends made under different neighbouring relations as one unit (see also
   tests/test_ledger.py for the whole conversion table).
4. A fitted model released as many sets as it was asked for. Now it draws exactly the sets charged.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN
from test_charge_before_read import METHODS, config

import dipsy
from dipsy.engine import engine_for
from dipsy.errors import BudgetError, PrivacyError
from dipsy.methods import REGISTRY
from dipsy.privacy.composition import requested_budget
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_laplace
from dipsy.privacy.session import Session

TRUE_RACE = [816, 109, 7, 39, 6, 17]  # CE's Race counts


# -- 1. seeded releases ---------------------------------------------------------------------------


def test_a_seeded_release_is_regenerable_and_says_it_is_not_private():
    release = dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        method="laplace-sanitizer",
        epsilon=0.1,
        columns=["Race"],
        release="table",
        options={"post": "raw"},
        seed=123,
    )
    noisy = release.tables[0]["count"].to_numpy()
    scale = release.statement.claim()["measurements"][0]["noise"]["scale"]
    regenerated = discrete_laplace(scale, 6, Randomness.from_seed(release.seed))  # the attack: the seed is published
    assert (noisy - regenerated).tolist() == TRUE_RACE  # so the seed gives the data away...
    meta = release.metadata()
    assert meta["privacy"]["differentially_private"] is False  # ...and the release says so
    assert meta["privacy"]["definition"].startswith("none: a seeded test release")
    assert meta["privacy"]["if_unseeded"]["definition"] == "pure-DP"
    assert "not differentially private" in meta["randomness"]


def test_a_production_release_claims_its_guarantee_and_draws_from_chacha():
    release = dipsy.synthesize(CE_DATA, CE_DOMAIN, method="dirichlet-multinomial", epsilon=1.0, columns=["Race"])
    meta = release.metadata()
    assert meta["privacy"]["differentially_private"] is True and meta["privacy"]["definition"] == "pure-DP"
    assert meta["seed"] is None and "ChaCha20" in meta["randomness"]
    rand = Randomness.from_seed(None)
    assert type(rand.numpy.bit_generator).__name__ == "ChaCha" and rand.secure


def test_unseeded_generators_do_not_repeat():
    a, b = Randomness.from_seed(None), Randomness.from_seed(None)
    assert not np.array_equal(a.numpy.integers(0, 2**62, 8), b.numpy.integers(0, 2**62, 8))


# -- 2. no data-dependent text ----------------------------------------------------------------------


def _public_part(release) -> dict:
    meta = release.metadata()
    for key in ("release_id", "created", "rows"):
        meta.pop(key)
    return json.loads(json.dumps(meta, default=str))


@pytest.mark.parametrize(
    "method, kwargs",
    [
        ("laplace-sanitizer", {"epsilon": 1.0, "neighbouring": "add-remove", "columns": ["Race"]}),
        ("perturbed-histogram", {"epsilon": 1.0, "columns": ["Income"], "options": {"bins": 4}}),
        ("privsyn", {"rho": 0.05, "delta": 1e-9, "columns": ["UrbanRural", "Race"], "options": {"iterations": 5}}),
    ],
)
def test_an_invalid_confidential_row_changes_nothing_in_release_json(method, kwargs, tmp_path):
    data = pd.read_csv(CE_DATA)
    with_bad = pd.concat([data, data.iloc[:1].assign(Race=np.nan, Income=np.nan, UrbanRural=np.nan)], ignore_index=True)
    # the same seed for both: an adaptive method's choices (privsyn's marginals) come from its noise
    clean = dipsy.synthesize(data, CE_DOMAIN, method=method, on_invalid="drop", seed=5, **kwargs)
    dirty = dipsy.synthesize(with_bad, CE_DOMAIN, method=method, on_invalid="drop", seed=5, **kwargs)
    assert dirty.dropped_rows == 1 and clean.dropped_rows == 0  # for the operator's terminal only
    assert _public_part(clean) == _public_part(dirty)
    assert "notes" not in clean.metadata() and "drop" in clean.metadata()["on_invalid"]


# -- 3. the ledger keeps relations apart ------------------------------------------------------------


def test_an_add_remove_spend_counts_double_under_a_substitution_cap(tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        method="dirichlet-multinomial",
        epsilon=0.5,
        columns=["Race"],
        ledger=ledger,
        dataset_id="ce",
        budget_cap=2,
        accept_noise=True,
    )  # substitute: the cap is stated under substitution
    dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        method="laplace-sanitizer",
        epsilon=0.5,
        columns=["Race"],
        release="table",
        neighbouring="add-remove",
        ledger=ledger,
        dataset_id="ce",
    )  # counts as ε = 1 under substitution
    with pytest.raises(BudgetError):
        dipsy.synthesize(
            CE_DATA,
            CE_DOMAIN,
            method="dirichlet-multinomial",
            epsilon=0.6,
            columns=["Race"],
            ledger=ledger,
            dataset_id="ce",
            accept_noise=True,
        )  # 0.5 + 1 + 0.6 > 2 (the old ledger said 1.6)


def test_a_release_that_publishes_n_cannot_count_under_an_add_remove_cap(tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        method="laplace-sanitizer",
        epsilon=0.5,
        columns=["Race"],
        release="table",
        neighbouring="add-remove",
        ledger=ledger,
        dataset_id="ce",
        budget_cap=2,
    )
    with pytest.raises(BudgetError, match="cannot count"):
        dipsy.synthesize(
            CE_DATA,
            CE_DOMAIN,
            method="dirichlet-multinomial",
            epsilon=0.5,
            columns=["Race"],
            ledger=ledger,
            dataset_id="ce",
            accept_noise=True,
        )


# -- 4. a model draws exactly the sets that were charged --------------------------------------------


def _fitted(method: str, tmp_path, table=config):
    kind = REGISTRY[method]
    c = table(method)
    data, domain, kwargs = c.data(tmp_path), c.domain(tmp_path), c.kwargs(tmp_path)
    budget, _ = requested_budget(kind.definition, kwargs.get("epsilon"), kwargs.get("delta"), kwargs.get("rho"))
    synthesizer = kind(budget, kwargs.get("sets", 1), kwargs.get("options"))
    engine = engine_for(data, domain)
    n = engine.ensure_valid().valid_rows
    plan = synthesizer.plan(n if synthesizer.relation.fixes_n else None, domain)
    rand = Randomness.from_seed(1)
    session = Session(engine, plan.declared(budget), plan.relation, rand, plan.measurements, plan.adaptive is not None)
    model = synthesizer.fit(session, plan)
    session.close()
    return synthesizer, model, rand


@pytest.mark.parametrize("method", METHODS)
def test_a_model_refuses_a_draw_past_its_charged_sets(method, tmp_path):
    synthesizer, model, rand = _fitted(method, tmp_path)
    assert model.sets == synthesizer.sets
    for _ in range(synthesizer.sets):
        model.draw(rand)
    with pytest.raises(PrivacyError, match="has drawn them all"):
        model.draw(rand)


@pytest.mark.parametrize("method", ["laplace-sanitizer", "dirichlet-multinomial"])
def test_a_table_model_refuses_a_second_table(method, tmp_path):
    _, model, rand = _fitted(method, tmp_path, lambda m: config(m) if m != "dirichlet-multinomial" else config("dp-prior"))
    model.draw_table(rand)
    with pytest.raises(PrivacyError):
        model.draw_table(rand)
