"""Declared analyses (the domain's ``analyses:``) and the inference section's models: declared,
default (chosen from the domain alone) or given, each compared, every failing term named."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import CE_DATA, CE_DOMAIN

import dipsy
from dipsy.domain import Column, Domain
from dipsy.domain.analyses import Analysis, two_categories
from dipsy.errors import DomainError
from dipsy.evaluation import verdicts
from dipsy.evaluation.regressions import MAX_DEFAULT_MODELS, choose_models, compare_models, default_models
from dipsy.evaluation.report import _inference

DECLARED = [
    {"formula": "Expenditure ~ Income + C(UrbanRural)"},
    {"formula": "UrbanRural ~ Income + C(Race)"},
    {"formula": "np.log(Income) ~ Expenditure", "model": "ols"},
]


def ce_spec(analyses=None) -> dict:
    spec = yaml.safe_load(CE_DOMAIN.read_text(encoding="utf-8"))
    if analyses is not None:
        spec["analyses"] = analyses
    return spec


# -- the declaration ---------------------------------------------------------------------------------


def test_analyses_load_save_and_enter_the_fingerprint(tmp_path):
    domain = Domain.from_dict(ce_spec(DECLARED))
    assert [a.formula for a in domain.analyses] == [a["formula"] for a in DECLARED]
    columns = {c.name: c for c in domain.columns}
    assert [a.model_for(columns) for a in domain.analyses] == ["ols", "logit", "ols"]  # a two-category response: logit
    assert domain.analyses[1].columns == ("UrbanRural", "Income", "Race")
    for name in ("d.yaml", "d.json"):
        domain.save(tmp_path / name)
        again = Domain.load(tmp_path / name)
        assert again.analyses == domain.analyses and again.sha256() == domain.sha256()
    plain = Domain.load(CE_DOMAIN)
    assert domain.sha256() != plain.sha256()
    assert "analyses" not in plain.to_dict()  # a domain without analyses keeps its fingerprint
    assert Domain.from_dict(ce_spec([])).sha256() == plain.sha256()


def test_project_keeps_the_analyses_whose_columns_are_kept():
    domain = Domain.from_dict(ce_spec(DECLARED))
    assert [a.formula for a in domain.project(["Expenditure", "Income", "UrbanRural"]).analyses] == [
        "Expenditure ~ Income + C(UrbanRural)",
        "np.log(Income) ~ Expenditure",
    ]
    assert domain.project(["Race", "Income"]).analyses == ()


@pytest.mark.parametrize(
    ("analyses", "message"),
    [
        (["Nope ~ Income"], "analysis 1 ('Nope ~ Income') names the column(s) 'Nope', which the domain does not list"),
        ([DECLARED[0], {"formula": "Expenditure ~ Incme"}], "analysis 2 ('Expenditure ~ Incme') names the column(s) 'Incme'"),
        (["Expenditure ~ __import__('os')"], "analysis 1 (\"Expenditure ~ __import__('os')\"): cannot read the formula"),
        (["Expenditure ~ ("], "analysis 1 ('Expenditure ~ ('): cannot read the formula"),
        ([{"formula": "Expenditure ~ Income", "model": "probit"}], "has model 'probit'"),
        (["Race ~ Income"], "OLS needs a numeric response, and 'Race' is categorical"),
        ([{"formula": "Race ~ Income", "model": "logit"}], "the response 'Race' has 6 categories"),
        ([{"formula": "Income ~ Race", "model": "logit"}], "the response 'Income' is numeric"),
        (["Income ~ I(Race * 2)"], "computes with 'Race', which the domain declares categorical"),
        ([{"formula": "Income ~ Race", "weights": "w"}], "analysis 1 has unknown field(s) 'weights'"),
        ([{"model": "ols"}], "analysis 1 has no formula"),
        ([DECLARED[0], DECLARED[0]], "analysis 2 ('Expenditure ~ Income + C(UrbanRural)') is declared twice"),
        ("Expenditure ~ Income", "'analyses:' is not a list"),
    ],
)
def test_a_bad_analysis_is_refused_naming_it(analyses, message):
    with pytest.raises(DomainError) as caught:
        Domain.from_dict(ce_spec(analyses))
    assert message in str(caught.value)


def test_an_analysis_is_refused_in_a_domain_file_too(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(CE_DOMAIN.read_text(encoding="utf-8") + "analyses:\n  - formula: Expenditure ~ Age\n", encoding="utf-8")
    with pytest.raises(DomainError, match="'Age', which the domain does not list"):
        Domain.load(path)


def test_two_categories():
    assert two_categories(Column("x", "categorical", categories=("no", "yes")))
    assert two_categories(Column("x", "integer", lower=1, upper=2))
    assert not two_categories(Column("x", "categorical", categories=(1, 2, 3)))
    assert not two_categories(Column("x", "numeric", lower=0, upper=1))


# -- the models chosen -------------------------------------------------------------------------------


def test_default_models_come_from_the_domain_alone():
    """Two originals of one domain get the same models; the CE domain's: its two numeric sensitive
    columns by OLS, then its two-category public column by a logit; Race (6 categories) is no response."""
    domain = Domain.load(CE_DOMAIN)
    source, choices, left = choose_models(domain)
    assert source == "default"
    assert [(c.formula, c.model) for c in choices] == [
        ("Income ~ C(UrbanRural) + C(Race) + Expenditure", "ols"),
        ("Expenditure ~ C(UrbanRural) + Income + C(Race)", "ols"),
        ("UrbanRural ~ Income + C(Race) + Expenditure", "logit"),
    ]
    assert [x["column"] for x in left] == ["Race"] and "6 categories" in left[0]["why"]
    ce = pd.read_csv(CE_DATA)
    other = ce.sample(frac=1.0, replace=True, random_state=3).reset_index(drop=True)
    other["Income"] = other["Income"] * 2
    first = compare_models(ce, [ce], domain, "single")
    second = compare_models(other, [ce.iloc[:500]], domain, "single")
    assert [m["formula"] for m in first["models"]] == [m["formula"] for m in second["models"]] == [c.formula for c in choices]
    assert first["left_out"] == second["left_out"]


def test_default_models_are_capped_and_leave_out_wide_columns():
    cols = [Column(f"y{k}", "numeric", lower=0, upper=1) for k in range(6)]
    cols.append(Column("wide", "categorical", categories=tuple(range(30)), role="public"))
    cols.append(Column("odd name", "categorical", categories=("a", "b"), role="public"))
    choices, left = default_models(Domain(tuple(cols)), sensitive=["y5"])
    assert len(choices) == MAX_DEFAULT_MODELS
    assert choices[0].formula.startswith("y5 ~ ") and "parameters.sensitive" in choices[0].why  # the release's own first
    assert 'C(Q("odd name"))' in choices[0].formula and "wide" not in choices[0].formula
    why = {x["column"]: x["why"] for x in left}
    assert "30 categories" in why["wide"] and "past the 4 default models" in why["y4"]


def test_declared_analyses_win_and_a_given_formula_runs_alone():
    domain = Domain.from_dict(ce_spec(DECLARED))
    source, choices, _ = choose_models(domain)
    assert source == "declared" and [c.formula for c in choices] == [a["formula"] for a in DECLARED]
    source, choices, _ = choose_models(domain, "Income ~ Expenditure")
    assert source == "given" and [(c.formula, c.model) for c in choices] == [("Income ~ Expenditure", "ols")]


# -- the comparison ----------------------------------------------------------------------------------


def insurance_data(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    p = 1 / (1 + np.exp(-(age - 45) / 8))
    return pd.DataFrame(
        {"insurance": np.where(rng.random(n) < p, "yes", "no"), "age": age, "region": rng.choice(["n", "s", "e"], n)}
    )


INSURANCE = Domain(
    (
        Column("insurance", "categorical", categories=("no", "yes")),
        Column("age", "integer", lower=0, upper=120),
        Column("region", "categorical", categories=("n", "s", "e"), role="public"),
    )
)


def test_a_yes_no_response_is_a_logit_of_its_second_category():
    data = insurance_data()
    part = compare_models(data, [data, data], INSURANCE, "reiter2003-partial", formula="insurance ~ age")
    assert part["source"] == "given" and part["model"] == "logit"
    assert part["models"][0]["response"] == "insurance = yes, against no"
    slope = part["coefficients"][1]
    assert slope["term"] == "age" and slope["original"]["estimate"] > 0
    assert slope["synthetic"]["estimate"] == pytest.approx(slope["original"]["estimate"])


def test_a_category_a_set_lacks_is_named_not_estimable():
    data = insurance_data()
    lacking = data[data["region"] != "e"].reset_index(drop=True)
    part = compare_models(data, [lacking, data], INSURANCE, "reiter2003-partial", formula="age ~ C(region)")
    terms = {c["term"]: c for c in part["coefficients"]}
    assert list(terms) == ["Intercept", "C(region)[T.s]", "C(region)[T.e]"]  # the domain's order: n is the reference
    assert np.isnan(terms["C(region)[T.e]"]["synthetic"]["estimate"])
    assert np.isfinite(terms["C(region)[T.s]"]["synthetic"]["estimate"])
    verdict = verdicts.inference(part, 2)
    assert verdict.level != "good" and "C(region)[T.e]" in verdict.text


def test_a_declared_model_that_cannot_be_fitted_is_named_and_the_others_run():
    data = insurance_data()
    domain = Domain(INSURANCE.columns, analyses=(Analysis("insurance ~ age"), Analysis("age ~ C(region)")))
    no_reference = data[data["region"] != "n"].reset_index(drop=True)
    part = compare_models(data, [no_reference], domain, "single")
    assert part["source"] == "declared" and "coefficients" in part["models"][0]
    assert "reference category of C(region)" in part["models"][1]["error"]
    verdict = verdicts.inference(part, 1)
    assert verdict.level != "good" and "age ~ C(region) (ols): not compared" in verdict.text


# -- the verdict and the report ----------------------------------------------------------------------


def coefficient(term, estimate, se, synthetic):
    return {
        "term": term,
        "original": {"estimate": estimate, "se": se, "lower": estimate - 2 * se, "upper": estimate + 2 * se},
        "synthetic": {
            "estimate": synthetic,
            "variance": se**2,
            "df": 50.0,
            "lower": synthetic - 2 * se,
            "upper": synthetic + 2 * se,
        },
        "ci_overlap": 0.5,
        "std_diff": (synthetic - estimate) / se,
    }


def two_models(flipped: float) -> dict:
    kept = {"formula": "y ~ x", "model": "ols", "rule": "reiter2003-partial", "coefficients": [coefficient("x", 1.0, 0.1, 1.02)]}
    other = {
        "formula": "z ~ age + C(sex)",
        "model": "ols",
        "rule": "reiter2003-partial",
        "coefficients": [
            coefficient("Intercept", 5.0, 1.0, 5.1),
            coefficient("age", 0.5, 0.1, flipped),
            coefficient("C(sex)[T.M]", 0.3, 0.1, 0.31),
        ],
    }
    return {"source": "declared", "models": [kept, other]}


def test_a_sign_flipped_slope_makes_the_verdict_poor_and_names_it_with_its_model():
    found = verdicts.inference(two_models(-0.05), 3)
    assert found.level == "poor"
    assert "z ~ age + C(sex) (ols): significant slope(s) halved, doubled or reversed: age 0.5 → -0.05" in found.text
    assert "y ~ x (ols): every coefficient within" in found.text and "declared in the domain" in found.text
    # the same slope kept: good; a flip of a slope that is not significant (|0.5 / 0.4| < 1.96) is no loss
    assert verdicts.inference(two_models(0.49), 3).level == "good"


def test_verdicts_of_an_evaluation_read_every_model():
    found = verdicts.verdicts({"dataset": {"sets": 3}, "inference": two_models(-0.5)})
    assert found["inference"].level == "poor" and "age 0.5 → -0.5" in found["inference"].text


def test_the_report_heads_the_models_by_where_they_came_from():
    page = _inference(two_models(-0.05), 3)
    assert "Models declared in the domain" in page and page.count("<h4>") == 2
    assert "Not the same conclusion" in page and "Same conclusion" in page
    default = two_models(0.5) | {"source": "default", "left_out": [{"column": "Race", "why": "6 categories"}]}
    page = _inference(default, 3)
    assert "Default models, chosen from the domain" in page and "Race: 6 categories" in page


# -- end to end --------------------------------------------------------------------------------------


def test_evaluate_compares_the_release_domains_declared_analyses(tmp_path):
    """A release made from a domain with analyses carries them in its domain.yaml; evaluate compares
    them without a formula, and lists an analysis naming a column the release does not hold."""
    ce = pd.read_csv(CE_DATA)
    domain = Domain.from_dict(ce_spec(DECLARED))
    folder = tmp_path / "rel"
    release = dipsy.synthesize(
        ce, domain, epsilon=5.0, sets=2, columns=["UrbanRural", "Income", "Expenditure"], seed=7, accept_noise=True
    )
    release.save(folder)
    assert [a.formula for a in Domain.load(folder / "domain.yaml").analyses] == [DECLARED[0]["formula"], DECLARED[2]["formula"]]
    metrics = dipsy.evaluate(ce, folder, domain=domain)
    part = metrics["inference"]
    assert part["source"] == "declared" and [m["formula"] for m in part["models"]] == [
        DECLARED[0]["formula"],
        DECLARED[2]["formula"],
    ]
    assert part["formula"] == DECLARED[0]["formula"] and part["coefficients"] == part["models"][0]["coefficients"]
    assert part["left_out"] == [{"analysis": DECLARED[1]["formula"], "why": "names a column the release does not hold: Race"}]
    assert "inference" in metrics["verdicts"]
    json.dumps(dipsy.evaluation.jsonable(metrics), allow_nan=False)
