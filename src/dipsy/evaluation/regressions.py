"""Regressions fitted on the original and on each synthetic set, compared term by term.

:func:`compare_models` is the evaluation's inference section: the analyst's questions, as
regressions chosen from public information only (:func:`choose_models`): the formula given
(``--formula``), else the analyses the domain declares (:mod:`dipsy.domain.analyses`), else
default models chosen from the domain (:func:`default_models`). :func:`regression` fits one
formula as written; the sensitive-attribute section (:mod:`.sensitive`) uses it for its logistic
regression per sensitive column.
"""

from __future__ import annotations

import keyword
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import inference
from ..domain import Column, Domain
from ..domain.analyses import Analysis, chosen_model, two_categories
from ..domain.codec import encode_column
from ..errors import DipsyError
from ..formula import Column as FormulaColumn
from ..formula import Formula, parse
from ..formula import design as formula_design
from ..inference import fit, interval_overlap
from ..noise_aware import noise_aware, pooled
from ..privacy.published import PublishedTable

#: What the noise-aware intervals are, for the section's readers.
NOISE_AWARE_RULE = (
    "parametric bootstrap over the published noisy table (Ferrando, Wang & Sheldon 2022): the sample and the DP "
    "noise drawn again; binned columns at their bins' midpoints"
)


def conclusion(interval: dict[str, float]) -> str:
    """What a 95 % interval says of a coefficient's sign: ``positive``, ``negative`` or ``unclear`` (it holds 0).

    >>> conclusion({"lower": 0.1, "upper": 0.4}), conclusion({"lower": -0.1, "upper": 0.4})
    ('positive', 'unclear')
    """
    lower, upper = interval["lower"], interval["upper"]
    return "positive" if lower > 0 else "negative" if upper < 0 else "unclear"


def regression(formula: str, original: pd.DataFrame, tables: list[pd.DataFrame], rule: str | None, model: str = "ols") -> dict:
    """The same regression on the original and on each set, combined by the release's rule.

    Per term: the original estimate with its interval; the combined synthetic estimate, variance,
    degrees of freedom and interval; the interval overlap of Karr et al. (2006); and the
    standardised difference (q̄ - β) / se(β). What statsmodels warns of while fitting (a fit that did
    not converge, a perfect separation) is kept under ``warnings``, one line each, not printed.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        base = fit(formula, original, model)
        n_ratio = float(np.mean([len(t) for t in tables])) / len(original)
        synthetic = inference.regression(tables, formula, rule or "reiter2003-partial", model, n_ratio=n_ratio)
    combined = synthetic.combined
    terms = list(base.params.index)
    if list(synthetic.terms) != terms:
        raise DipsyError(
            f"the synthetic sets give terms {list(synthetic.terms)}, the original {terms}",
            "use categories present in every set, or a simpler formula",
        )
    return _rows(formula, model, base, terms, combined, caught)


# -- the models the inference section compares -----------------------------------------------------

#: The most default models (each fitted to the original and to every set: a few seconds at most on
#: a survey file, where the rest of the evaluation takes tens).
MAX_DEFAULT_MODELS = 4
#: A categorical column with more categories is left out of a default model: each category is a
#: coefficient, and twenty already ask a set for hundreds of records to estimate them.
MAX_LEVELS = 20
#: The most coefficients (design columns) a default model holds; columns past it are left out, in
#: the domain's order.
MAX_DESIGN_COLUMNS = 40
#: What names where the models came from, in the JSON's ``source`` and the report's heading.
SOURCES = {
    "given": "the formula given (--formula)",
    "declared": "declared in the domain (analyses:)",
    "default": "chosen from the domain (no formula given, no analyses declared)",
}


@dataclass(frozen=True)
class Choice:
    """One model the inference section fits: its formula, its model and why it was chosen."""

    formula: str
    model: str
    why: str


def choose_models(
    domain: Domain,
    formula: str | None = None,
    model: str | None = None,
    sensitive: Sequence[str] = (),
    dropped: Sequence[Analysis] = (),
) -> tuple[str, list[Choice], list[dict[str, str]]]:
    """The models to compare, from public information only (the domain, the release's parameters,
    what was asked): ``(source, choices, left_out)``.

    - ``given``: ``formula`` alone (``--formula``), by ``model`` or, without one, a logit for a
      response of two categories, else OLS.
    - ``declared``: the domain's :attr:`~dipsy.domain.Domain.analyses`, every one, in the order
      written; ``dropped`` (analyses naming a column not released) are listed as left out.
    - ``default``: :func:`default_models`.

    Nothing here reads the data, so two originals with the same domain get the same models.
    """
    columns = {c.name: c for c in domain.columns}
    if formula is not None:
        # fitted as written, not checked against the domain (a column it lacks is the fit's error)
        return "given", [Choice(formula, chosen_model(parse(formula), columns, model), "given (--formula)")], []
    left = [
        {
            "analysis": a.formula,
            "why": "names a column the release does not hold: " + ", ".join(c for c in a.columns if c not in columns),
        }
        for a in dropped
    ]
    if domain.analyses:
        return "declared", [Choice(a.formula, a.model_for(columns), "declared in the domain") for a in domain.analyses], left
    choices, out = default_models(domain, sensitive)
    return "default", choices, left + out


def default_models(domain: Domain, sensitive: Sequence[str] = ()) -> tuple[list[Choice], list[dict[str, str]]]:
    """At most :data:`MAX_DEFAULT_MODELS` regressions chosen from the domain alone, with what was left out and why.

    Responses, in this order: the release's sensitive columns (``parameters.sensitive``), the
    domain's columns of role ``sensitive``, then its other columns of two categories, each in the
    domain's order. A column of two categories (:func:`~dipsy.domain.analyses.two_categories`) gets a
    logit of its second category, an integer or numeric one OLS; a categorical column of more
    categories is no response. Each is regressed on every other column, main effects only:
    categorical as ``C(column)`` (left out past :data:`MAX_LEVELS` categories), integer and numeric
    as they are, until the model holds :data:`MAX_DESIGN_COLUMNS` coefficients.

    >>> from dipsy.domain import Column, Domain
    >>> d = Domain((Column("g", "categorical", categories=("a", "b"), role="public"), Column("y", "numeric", lower=0, upper=1)))
    >>> [(c.formula, c.model) for c in default_models(d)[0]]
    [('y ~ C(g)', 'ols'), ('g ~ y', 'logit')]
    """
    columns = {c.name: c for c in domain.columns}
    order: dict[str, str] = {}
    for name in sensitive:
        if name in columns:
            order.setdefault(name, "the release's sensitive column (parameters.sensitive)")
    for c in domain.columns:
        if c.role == "sensitive":
            order.setdefault(c.name, "a sensitive column (role: sensitive)")
    for c in domain.columns:
        if two_categories(c):
            order.setdefault(c.name, "a column of two categories")
    left: list[dict[str, str]] = []
    predictors: list[tuple[str, str]] = []  # (column, term)
    for c in domain.columns:
        term = _term(c.name)
        if term is None:
            left.append(
                {"column": c.name, "why": "its name holds both kinds of quote or a backslash, which a formula cannot spell"}
            )
        elif c.is_categorical and len(c.levels) > MAX_LEVELS:
            left.append(
                {"column": c.name, "why": f"{len(c.levels)} categories, more than the {MAX_LEVELS} a default model takes"}
            )
        elif c.is_categorical and len(c.levels) < 2:
            left.append({"column": c.name, "why": "one category: a constant"})
        else:
            predictors.append((c.name, f"C({term})" if c.is_categorical else term))
    choices: list[Choice] = []
    crowded: dict[str, list[str]] = {}  # predictor -> the responses whose models had no room for it
    for name, why in order.items():
        column = columns[name]
        if len(choices) == MAX_DEFAULT_MODELS:
            left.append(
                {"column": name, "why": f"past the {MAX_DEFAULT_MODELS} default models (declare it in the domain's analyses:)"}
            )
            continue
        if column.is_categorical and not two_categories(column):
            left.append(
                {
                    "column": name,
                    "why": f"{len(column.levels)} categories, and a default logit models one of two "
                    "(declare an analysis of it in the domain's analyses:)",
                }
            )
            continue
        response = _term(name)
        if response is None:
            continue
        terms, width = [], 0
        for other, term in predictors:
            if other == name:
                continue
            size = len(columns[other].levels) - 1 if columns[other].is_categorical else 1
            if width + size > MAX_DESIGN_COLUMNS:
                crowded.setdefault(other, []).append(name)
                continue
            terms.append(term)
            width += size
        if not terms:
            left.append({"column": name, "why": "no other column to regress it on"})
            continue
        model = "logit" if two_categories(column) else "ols"
        choices.append(Choice(f"{response} ~ {' + '.join(terms)}", model, why))
    chosen = {c.formula.split(" ~ ")[0] for c in choices}
    for other, responses in crowded.items():
        kept = [r for r in responses if (_term(r) or r) in chosen]
        if kept:
            left.append(
                {
                    "column": other,
                    "why": f"past the {MAX_DESIGN_COLUMNS} coefficients a default model holds, "
                    f"as a predictor of {', '.join(kept)}",
                }
            )
    return choices, left


def _term(name: str) -> str | None:
    """A column as a formula writes it: its name, or ``Q("name")``; None when no quoting can spell it."""
    if name.isidentifier() and not keyword.iskeyword(name) and name.isascii():
        return name
    for quote in ('"', "'"):
        if quote not in name and "\\" not in name:
            return f"Q({quote}{name}{quote})"
    return None


def compare_models(
    original: pd.DataFrame,
    tables: list[pd.DataFrame],
    domain: Domain,
    rule: str | None,
    formula: str | None = None,
    model: str | None = None,
    sensitive: Sequence[str] = (),
    dropped: Sequence[Analysis] = (),
    published: Sequence[PublishedTable] = (),
    seed: int = 0,
) -> dict[str, Any] | None:
    """The inference section: every chosen model (:func:`choose_models`) fitted to the original and
    to each set and compared term by term (:func:`compare`).

    Returns ``{"source", "models", "left_out"}``, each model as :func:`compare` gives it with its
    ``why`` (or, for a declared or default model that cannot be fitted, its ``error``), and, for
    one-formula readers, the first compared model's keys at the top (``formula``, ``model``,
    ``rule``, ``coefficients``). A given formula that cannot be fitted is an error; None when there
    is no model and nothing was left out. ``published``: the release's noisy tables, for the
    noise-aware intervals of the models whose table it carries (bootstrap seeded by ``seed``).
    """
    source, choices, left = choose_models(domain, formula, model, sensitive, dropped)
    if not choices and not left:
        return None
    models = []
    for choice in choices:
        try:
            result = compare(choice.formula, original, tables, domain, rule, choice.model, published, seed)
        except DipsyError as e:
            if source == "given":
                raise
            result = {"formula": choice.formula, "model": choice.model, "error": (str(e.problem).splitlines() or ["?"])[0]}
        models.append(result | {"why": choice.why})
    first = next((m for m in models if "coefficients" in m), {})
    head = {k: v for k, v in first.items() if k != "why"}
    return head | {"source": source, "models": models, "left_out": left}


def compare(
    formula: str,
    original: pd.DataFrame,
    tables: list[pd.DataFrame],
    domain: Domain,
    rule: str | None,
    model: str = "ols",
    published: Sequence[PublishedTable] = (),
    seed: int = 0,
) -> dict[str, Any]:
    """One model on the original and on each set, as :func:`regression` gives it, with the domain's
    reading of the columns: a categorical column is categorical whatever its codes (``Race`` coded
    1–6 is six categories, not a number), its categories in the domain's order (the first one the
    original holds is the reference), the same in every set; a logit's response of two categories
    is modelled as its second (``response`` says which).

    A set that lacks a category the original holds estimates no coefficient for it (NaN there,
    and so in the combined estimate); a set that lacks a factor's reference category cannot be
    compared with the original (an error naming it).

    When the release publishes the noisy table of the model's columns (``published``: a declared
    analysis, its pair or its whole table), each term also gets its noise-aware interval
    (:func:`dipsy.noise_aware.noise_aware`, bootstrap seeded by ``seed``). Every interval gets its
    conclusion (:func:`conclusion`), so a reader sees where the synthetic answer differs.
    """
    parsed = parse(formula)
    names = [n for n in domain.names if n in _formula_columns(parsed)]
    response = parsed.response.expression.name if isinstance(parsed.response.expression, FormulaColumn) else None
    # the rows of the original the model can use: a value in every column it names
    codes = {n: _codes(original[n], domain[n]) for n in names if domain[n].is_categorical and n in original}
    complete = np.ones(len(original), dtype=bool)
    for n in names:
        if n in codes:
            complete &= codes[n] >= 0
        elif n in original:
            complete &= pd.to_numeric(original[n], errors="coerce").notna().to_numpy()
    levels = {}
    for name in names:
        column = domain[name]
        if name == response and model == "logit" and two_categories(column):
            levels[name] = column.levels if column.is_categorical else tuple(int(v) for v in column.bounds)
        elif name in codes:  # the categories those rows hold, in the domain's order (the first is the reference)
            levels[name] = tuple(column.levels[k] for k in np.unique(codes[name][complete & (codes[name] >= 0)]))
    frames = [_categorical(t, domain, levels) for t in (original, *tables)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        base = _fit(parsed, frames[0], model, "the original")
        terms = list(base.params.index)
        q, u = np.full((len(tables), len(terms)), np.nan), np.full((len(tables), len(terms)), np.nan)
        for k, frame in enumerate(frames[1:]):
            fitted = _fit(parsed, frame, model, f"synthetic set {k + 1}")
            q[k], u[k] = fitted.params.reindex(terms).to_numpy(), fitted.bse.reindex(terms).to_numpy() ** 2
        single_df = float(base.df_resid) if model == "ols" else np.inf
        n_ratio = float(np.mean([len(t) for t in tables])) / len(original)
        combined = inference.combine(
            q, u, "single" if len(tables) == 1 else rule or "reiter2003-partial", n_ratio=n_ratio, single_df=single_df
        )
    out = _rows(formula, model, base, terms, combined, caught)
    if pooled(published, names) is not None:  # the release publishes the model's table: intervals that count the noise
        prepare = lambda cells: _categorical(cells, domain, levels)  # noqa: E731 - the cells read as the sets are
        try:
            aware = noise_aware(formula, published, names, model, seed=seed, prepare=prepare).table()
        except DipsyError as e:
            out["noise_aware_error"] = (str(e.problem).splitlines() or ["?"])[0]
        else:
            out["noise_aware_rule"] = NOISE_AWARE_RULE
            for row in out["coefficients"]:
                if row["term"] in aware.index:
                    a = aware.loc[row["term"]]
                    row["noise_aware"] = {k: float(a[k]) for k in ("estimate", "variance", "lower", "upper")}
    for row in out["coefficients"]:
        row["conclusion"] = {k: conclusion(row[k]) for k in ("original", "synthetic", "noise_aware") if k in row}
    if response is not None and model == "logit" and response in levels:
        column, (first, second) = domain[response], levels[response]
        out["response"] = f"{response} = {_shown(column, second)}, against {_shown(column, first)}"
    return out


def _rows(formula: str, model: str, base: Any, terms: list[str], combined: inference.Combined, caught: list) -> dict[str, Any]:
    ci = base.conf_int(0.05)
    overlap = interval_overlap(ci[0].to_numpy(), ci[1].to_numpy(), combined.lower, combined.upper)
    rows = []
    for k, term in enumerate(terms):
        rows.append(
            {
                "term": term,
                "original": {
                    "estimate": float(base.params.iloc[k]),
                    "se": float(base.bse.iloc[k]),
                    "lower": float(ci.iloc[k, 0]),
                    "upper": float(ci.iloc[k, 1]),
                },
                "synthetic": {
                    "estimate": float(combined.estimate[k]),
                    "variance": float(combined.variance[k]),
                    "df": float(combined.df[k]),
                    "lower": float(combined.lower[k]),
                    "upper": float(combined.upper[k]),
                },
                "ci_overlap": float(overlap[k]),
                "std_diff": float((combined.estimate[k] - base.params.iloc[k]) / base.bse.iloc[k]),
            }
        )
    seen = sorted({str(w.message).splitlines()[0] for w in caught if str(w.message)})
    return {"formula": formula, "model": model, "rule": combined.rule, "coefficients": rows} | (
        {"warnings": seen} if seen else {}
    )


def _fit(parsed: Formula, frame: pd.DataFrame, model: str, what: str) -> Any:
    """Fit one frame, leaving out the coefficients of categories it lacks (all-zero columns)."""
    response, design = formula_design(parsed, frame, binary=model == "logit")
    empty = [c for c in design.columns if c != "Intercept" and not design[c].any()]
    design = design.drop(columns=empty)
    groups: dict[str, list[str]] = {}
    for c in design.columns:  # a main effect's treatment columns, e.g. C(Race)[T.2] ... C(Race)[T.6]
        if ":" not in c and c.endswith("]") and "[T." in c:
            groups.setdefault(c[: c.index("[T.")], []).append(c)
    for factor, cols in groups.items():
        if "Intercept" in design and len(design) and bool((design[cols].sum(axis=1) == 1).all()):
            raise DipsyError(
                f"cannot compare {parsed.text!r}: {what} holds no record in the reference category of {factor}",
                "name a reference category every set holds, e.g. C(column, Treatment(reference=...))",
            )
    return inference.fit_design(
        response, design, model, f"cannot fit {parsed.text!r} to {what}", "write a simpler formula over the released columns"
    )


def _formula_columns(parsed: Formula) -> set[str]:
    found: set[str] = set()
    stack: list[Any] = [parsed.response.expression, *(f.expression for t in parsed.terms for f in t.factors)]
    while stack:
        e = stack.pop()
        if isinstance(e, FormulaColumn):
            found.add(e.name)
        else:
            stack.extend(getattr(e, name) for name in ("operand", "argument", "left", "right") if hasattr(e, name))
    return found


def _codes(values: pd.Series, column: Column) -> np.ndarray:
    """The value codes of a column (-1: no value: empty, a missing state, or outside the domain)."""
    codes = encode_column(values.reset_index(drop=True), column).codes
    size = column.value_size or 0
    return np.where((codes >= 0) & (codes < size), codes, -1)


def _categorical(frame: pd.DataFrame, domain: Domain, levels: dict[str, tuple]) -> pd.DataFrame:
    """``frame`` with each column of ``levels`` a pandas Categorical of those categories (in that order)."""
    out = frame.copy() if levels else frame
    for name, kept in levels.items():
        if name not in frame:
            continue
        column = domain[name]
        codes = _codes(frame[name], column)
        if column.is_categorical:
            values = pd.Categorical.from_codes(codes, categories=list(column.levels))
        else:  # an integer column of two values: codes are value - lower
            values = pd.Categorical.from_codes(codes, categories=list(range(int(column.bounds[0]), int(column.bounds[1]) + 1)))
        out[name] = values.set_categories(list(kept))
    return out


def _shown(column: Column, value: Any) -> str:
    """A category with its label: ``2 (Rural)``."""
    labels = column.labels if column.is_categorical else None
    if labels and value in column.levels:
        return f"{value} ({labels[list(column.levels).index(value)]})"
    return str(value)
