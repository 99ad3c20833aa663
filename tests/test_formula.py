"""dipsy.formula: the grammar, refusals (code injection among them), and agreement with patsy.

patsy and statsmodels' formula API are used here as the reference only: the fits of
:func:`dipsy.inference.fit` must give the same columns and coefficients (to 1e-10) without them.
"""

from __future__ import annotations

import builtins
import json

import numpy as np
import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN

from dipsy import inference
from dipsy.cli import main
from dipsy.errors import DipsyError
from dipsy.formula import Column, Negative, Number, Operation, design, parse

INJECTION = "y ~ __import__('os').system('touch X')"


@pytest.fixture(scope="module")
def data():
    """Numbers, text, a pandas Categorical in its own order, booleans, an odd name, missing values."""
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame(
        {
            "y": rng.normal(size=n),
            "x": rng.normal(size=n),
            "z": rng.uniform(1, 5, n),
            "g": rng.choice(["a", "b", "c"], n),
            "h": rng.choice([1, 2, 3, 4], n),
            "k": pd.Categorical(rng.choice(["u", "v", "w"], n), categories=["w", "u", "v"]),
            "t": rng.choice([True, False], n),
            "odd name": rng.normal(size=n),
            "s": rng.choice(["f", "m"], n),
        }
    )
    frame["b"] = (frame["x"] + rng.normal(size=n) > 0).astype(int)
    frame.loc[[3, 30], "x"] = np.nan
    frame.loc[5, "g"] = None
    return frame


# -- the grammar ---------------------------------------------------------------------------------

ACCEPTED = [
    ("y ~ x", "y", ["Intercept", "x"]),
    ("y~x*z", "y", ["Intercept", "x", "z", "x:z"]),
    ("y ~ x + C(g)", "y", ["Intercept", "x", "C(g)"]),
    ("y ~ (a + b):c", "y", ["Intercept", "a:c", "b:c"]),
    ("y ~ a:b + b:a + a:a", "y", ["Intercept", "a:b", "a"]),
    ("y ~ x*z - x:z", "y", ["Intercept", "x", "z"]),
    ("y ~ x - 1", "y", ["x"]),
    ("y ~ 0 + x", "y", ["x"]),
    ("y ~ -1 + x", "y", ["x"]),
    ("y ~ x + 0", "y", ["x"]),
    ("y ~ x - 1 + 1", "y", ["Intercept", "x"]),
    (
        "y ~ np.log(x) + log(x) + np.log1p(x) + exp(x) + np.sqrt(x)",
        "y",
        ["Intercept", "np.log(x)", "log(x)", "np.log1p(x)", "exp(x)", "np.sqrt(x)"],
    ),
    (
        "y ~ np.log(x+1) + I(x+z*2) + I(-x**2) + I(2**-x) + I((x - 1) / z)",
        "y",
        ["Intercept", "np.log(x + 1)", "I(x + z * 2)", "I(-x ** 2)", "I(2 ** -x)", "I((x - 1) / z)"],
    ),
    ("y ~ Q(\"odd name\") + Q('x')", "y", ["Intercept", 'Q("odd name")', "Q('x')"]),
    (
        "y ~ C(g,Treatment(reference='b')) + C(h, Treatment(3)) + C(Q(\"odd name\"))",
        "y",
        ["Intercept", "C(g, Treatment(reference='b'))", "C(h, Treatment(3))", 'C(Q("odd name"))'],
    ),
    ("C(s) ~ x", "C(s)", ["Intercept", "x"]),
    ("np.log1p(y) ~ x:C(g):z", "np.log1p(y)", ["Intercept", "x:C(g):z"]),
    ("Région ~ Größe", "Région", ["Intercept", "Größe"]),
]


@pytest.mark.parametrize("text, response, terms", ACCEPTED)
def test_accepted_formulas_give_patsys_terms(text, response, terms):
    f = parse(text)
    assert f.response.name == response and [t.name for t in f.terms] == terms


def test_arithmetic_is_a_tree_with_pythons_precedence():
    (factor,) = parse("y ~ I(-x ** 2 / 3 - z)").terms[1].factors
    assert factor.coding == "numeric"
    assert factor.expression == Operation(
        "-", Operation("/", Negative(Operation("**", Column("x"), Number(2.0))), Number(3.0)), Column("z")
    )
    assert parse("y ~ C(g, Treatment(reference=-2))").terms[1].factors[0].reference == -2


REFUSED = [  # the formula, where, what
    (INJECTION, "character 5", "a call of __import__(), which a formula cannot call"),
    ("y ~ I(__import__('os').system('touch X'))", "character 7", "a call of __import__()"),
    ("y ~ np.log(__import__('os').system('touch X'))", "character 12", "a call of __import__()"),
    ("y ~ C(__import__('os').system('touch X'))", "character 7", "a call of __import__()"),
    ("__import__('os').system('touch X') ~ x", "character 1", "a call of __import__()"),
    ("y ~ eval('1')", "character 5", "a call of eval()"),
    ("y ~ x.__class__", "character 5", "the attribute x.__class__"),
    ("y ~ os.system('touch X')", "character 5", "the attribute os.system"),
    ("y ~ np.system('touch X')", "character 5", "the attribute np.system"),
    ("y ~ np.log.__globals__", "character 5", "the attribute np.log"),
    ("y ~ C(x, lambda: 1)", "character 10", "a coding other than Treatment"),
    ("y ~ C(x, Sum)", "character 10", "a coding other than Treatment"),
    ("y ~ C(x, Treatment(reference=x))", "character 30", "a reference that is not a number or a quoted category"),
    ("y ~ lambda: 1", "character 5", "the Python keyword 'lambda'"),
    ("y ~ x[0]", "character 6", "a subscript or bracket '['"),
    ("y ~ x; import os", "character 6", "';'"),
    ("y ~ x @ z", "character 7", "'@'"),
    ("y ~ 'x'", "character 5", "expected a term, found \"'x'\""),
    ("y ~ Q(x)", "character 7", "Q() without a quoted column name"),
    ('y ~ Q("a\\"b")', "character 7", "a string that does not end on the line, or holds a backslash"),
    ("y ~ x + 2", "character 9", "the number 2"),
    ("y ~ x ** 2", "character 7", "'**' between terms"),
    ("y ~ a / b", "character 7", "'/' between terms"),
    ("y ~ 1:x", "character 6", "0 or 1 in the interaction ':'"),
    ("y ~ -x", "character 5", "a minus sign before a term"),
    ("y + z ~ x", "character 3", "'+' after the response"),
    ("y ~", "the end", "expected a term, found nothing"),
    ("~ x", "character 1", "no response before '~'"),
    ("y ~ x ~ z", "character 7", "unexpected '~'"),
    ("y ~ I(x", "the end", "expected ')' to close I(, found nothing"),
    ("y ~ np.log(x, 2)", "character 13", "expected ')' to close log(, found ','"),
    ("y ~ f(x)", "character 5", "a call of f()"),
]


@pytest.mark.parametrize("text, where, what", REFUSED)
def test_refused_formulas_name_the_place_and_the_fix(text, where, what, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DipsyError) as caught:
        parse(text)
    assert caught.value.problem.startswith(f"cannot read the formula {text!r}: at {where}, {what}") and caught.value.fix
    assert list(tmp_path.iterdir()) == []  # nothing ran: no file X


def test_a_formula_without_a_tilde_says_how_one_is_written():
    with pytest.raises(DipsyError, match="it has no '~'; write the response, '~', then the terms"):
        parse("y x")


@pytest.mark.parametrize(
    "text", ["y ~ " + "(" * 5000 + "x" + ")" * 5000, "y ~ I(" + "-" * 5000 + "x)", "y ~ I(x" + " ** x" * 5000 + ")"]
)
def test_deep_nesting_is_refused_not_a_crash(text):
    with pytest.raises(DipsyError, match="nests too deeply"):
        parse(text)


def test_the_injection_is_refused_by_every_entry_point_and_creates_nothing(data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    frame = data.assign(X=1.0)
    for call in (
        lambda: inference.fit(INJECTION, frame),
        lambda: inference.regression([frame, frame], INJECTION),
        lambda: design(INJECTION, frame),
    ):
        with pytest.raises(DipsyError, match="__import__"):
            call()
    assert not (tmp_path / "X").exists()


def test_a_fit_evaluates_no_text(data, monkeypatch):
    """No eval, exec or compile, and nothing of patsy's, on the way from the text to the fit."""
    import patsy.eval

    def refuse(*args, **kwargs):
        raise AssertionError("text was evaluated")

    # the same fit once first: the modules it imports on first use are compiled from source where an
    # install wrote no bytecode (import calls compile), which is not the formula's text being evaluated
    formula = "y ~ C(g) * np.log(z) + I(x ** 2) + Q('odd name')"
    inference.fit(formula, data)
    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, refuse)
    monkeypatch.setattr(patsy.eval.EvalEnvironment, "eval", refuse)
    result = inference.fit(formula, data)
    assert "C(g)[T.b]:np.log(z)" in result.params.index


DATA_REFUSED = [
    ("Nope ~ x", "ols", "the data have no column 'Nope'"),
    ("y ~ np.log(g)", "ols", "np.log(g) computes with 'g', which holds categories"),
    ("y ~ I(k * 2)", "ols", "which holds categories"),
    (
        "y ~ C(g, Treatment(reference='zz'))",
        "ols",
        "the reference 'zz' of C(g, Treatment(reference='zz')) is not one of its categories ('a', 'b', 'c')",
    ),
    ("y ~ C(h, Treatment(reference='1'))", "ols", "is not one of its categories (1, 2, 3, 4)"),
    ("g ~ x", "ols", "the response g is categorical, and a linear model needs a number"),
    (
        "C(g) ~ x",
        "logit",
        "the response C(g) has 3 categories ('a', 'b', 'c'), and a logit models one category against one other",
    ),
]


@pytest.mark.parametrize("text, model, message", DATA_REFUSED)
def test_formulas_that_do_not_fit_the_data_are_clear_errors(data, text, model, message):
    with pytest.raises(DipsyError, match="cannot fit") as caught:
        inference.fit(text, data, model)
    assert message in caught.value.problem and caught.value.fix


# -- agreement with statsmodels' formula API (patsy) ---------------------------------------------

OLS = [
    "y ~ x",
    "y ~ C(g) + x",
    "y ~ x * C(g)",
    "y ~ C(g):x",
    "y ~ C(g):C(h)",
    "y ~ C(g) * C(h)",
    "y ~ C(g) - 1",
    "y ~ 0 + x + C(g)",
    "y ~ x + C(g):C(h) - 1",
    "y ~ np.log(z) + I(x ** 2) + I(x*z - 1) + np.exp(x / 3)",
    "y ~ g + k + t",
    "y ~ x:z + x + z",
    "y ~ C(h, Treatment(reference=3)) + x",
    "y ~ C(g, Treatment('b')) * x",
    'y ~ Q("odd name") + np.sqrt(z)',
    "y ~ x:C(g):C(h)",
    "y ~ C(g) + C(g):x + C(h):x",
    "y ~ (x + z) * C(g) - z",
    "np.log(z) ~ I(-x + 2**-1) + np.log1p(z)",
    "y ~ x + x:z:C(g) + z:C(h)",
    "y ~ C(k) * C(g)",
    "y ~ t:x + x",
    "y ~ C(g) + I(x*2):C(g)",
]


@pytest.mark.parametrize("text", OLS)
def test_ols_agrees_with_the_formula_api(data, text):
    import statsmodels.formula.api as smf

    reference, ours = smf.ols(text, data).fit(), inference.fit(text, data)
    assert list(ours.params.index) == list(reference.params.index) and ours.nobs == reference.nobs
    np.testing.assert_allclose(ours.params, reference.params, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.bse, reference.bse, rtol=0, atol=1e-10)


@pytest.mark.parametrize("text", ["b ~ x + C(g)", "b ~ x * C(h) + np.log(z)", "b ~ C(k) + t"])
def test_logit_agrees_with_the_formula_api(data, text):
    import statsmodels.formula.api as smf

    reference, ours = smf.logit(text, data).fit(disp=0), inference.fit(text, data, "logit")
    assert list(ours.params.index) == list(reference.params.index)
    np.testing.assert_allclose(ours.params, reference.params, rtol=0, atol=1e-10)


def test_a_two_category_response_models_the_category_that_is_not_the_reference(data):
    as_number = data.assign(male=(data["s"] == "m").astype(float))
    male = inference.fit("male ~ x + C(g)", as_number, "logit").params
    np.testing.assert_allclose(inference.fit("C(s) ~ x + C(g)", data, "logit").params, male, rtol=0, atol=1e-12)
    np.testing.assert_allclose(inference.fit("s ~ x + C(g)", data, "logit").params, male, rtol=0, atol=1e-12)
    female = inference.fit("C(s, Treatment(reference='m')) ~ x + C(g)", data, "logit").params
    np.testing.assert_allclose(female, -male, rtol=0, atol=1e-6)  # the same model, the other category


def test_a_term_missing_from_a_set_combines_as_nan(data):
    full = data.dropna()
    without_c = full[full["g"] != "c"]
    estimates = inference.regression([full, without_c], "y ~ C(g)").table()["estimate"]
    assert np.isnan(estimates["C(g)[T.c]"]) and np.isfinite(estimates["C(g)[T.b]"])


# -- the command line ----------------------------------------------------------------------------


def test_evaluate_refuses_a_hostile_formula_on_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    release = tmp_path / "release"
    release.mkdir()
    pd.read_csv(CE_DATA).to_csv(release / "synthetic_1.csv", index=False)
    (release / "domain.yaml").write_text(CE_DOMAIN.read_text())
    (release / "release.json").write_text(json.dumps({"release": "records", "method": "copy", "sets": 1, "privacy": {}}))
    code = main(["evaluate", str(CE_DATA), str(release), "--formula", INJECTION, "--json", str(tmp_path / "m.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: cannot read the formula") and err.count("\n") == 1 and "; " in err
    assert "__import__" in err and "Traceback" not in err
    assert not (tmp_path / "X").exists() and not (tmp_path / "m.json").exists()
