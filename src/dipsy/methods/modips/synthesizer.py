r"""modips: model-based differentially private synthesis (Liu 2016, arXiv 1606.08052), as Bowen & Liu describe it.

Algorithm (S-003 §3.2, Figure 1; ``METHODS.md`` §2.2). For each set ``l = 1..m``, with budget ``ε/m``:

1. compute the model's Bayesian sufficient statistics ``s`` (:mod:`.models`);
2. sanitize them with the Laplace mechanism at their global sensitivities, derived from the public
   bounds of the domain, the budget split over the components or not (eqs. N1–N2 of
   :mod:`.noise`), and bring out-of-bound values back by thresholding (post-processing, free) or
   truncation (charged: scales doubled, eq. N6), giving ``s*_l``;
3. draw ``θ*_l ~ p(θ | s*_l)`` and ``n`` records ``x*_l ~ f(x | θ*_l)`` (post-processing of ``s*_l``).

Privacy
-------
Definition: ε-DP. Each set is ``ε/m``-DP (steps 2–3; proofs in :mod:`.noise` and :mod:`.models`)
and the ``m`` sets, each from fresh noise, are ε-DP together by sequential composition. The model
refuses to draw more than the ``m`` sets the plan paid for. Neighbouring relation: substitution
with ``n`` public (all models); add/remove for ``model=multinomial`` (``n`` then private). Public:
``n`` (under substitution) and the domain — categories and the bounds of numeric columns, from
which every sensitivity is derived. Counts get exact discrete Laplace noise; real-valued statistics
floating-point Laplace noise, for which the guarantee holds for the ideal mechanism (Mironov 2012).
Posterior and record draws are NumPy/SciPy floating-point samplers, as in the other posterior
methods.

Options
-------
``model``
    ``bernoulli`` | ``normal`` | ``multinomial`` | ``mixed``; default chosen from the columns: one
    two-category column → bernoulli; categorical columns only → multinomial; one numeric column
    → normal; categorical and numeric columns → mixed.
``budget``
    ``split`` (default; ε/m/J per component) or ``non-split`` (one scale, the L1 sensitivity of all
    statistics). Split is the default for every model: non-split adds statistics of different
    units (a mean and a variance), which is poor unless they are on similar scales.
``post``
    ``threshold`` (default; BIT) or ``truncation`` (charged twice, see :mod:`.noise`).
``prior``
    Beta ``α, β`` for bernoulli (default ``1/3, 1/3``), flat Dirichlet ``α`` for multinomial and
    mixed (default ``1/3``); none for normal (``∝ 1/σ²``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ...domain import Column, Domain
from ...engine import Engine
from ...errors import DipsyError
from ...privacy.rng import Randomness
from ...privacy.samplers import to_fraction
from ..base import ADD_REMOVE, SUBSTITUTE, Model, Option, Plan, Synthesizer
from . import models as M
from .noise import BUDGETS, POSTS, Component, check_choice, component_loss, noise_scales, sanitize

MODELS = ("bernoulli", "normal", "multinomial", "mixed")
DEFAULT_PRIOR = 1 / 3


def _model(value: Any) -> str:
    return check_choice("model", value, MODELS)


def _is_cell_column(c: Column) -> bool:
    """Columns whose codes are cells: categorical, ordinal, or integer without bins."""
    return c.is_categorical or (c.kind == "integer" and c.bins is None)


def choose_model(domain: Domain) -> str:
    """The default model for the columns (see the module docstring)."""
    cols = domain.columns
    if all(c.is_categorical for c in cols):
        return "bernoulli" if len(cols) == 1 and cols[0].size == 2 else "multinomial"
    if len(cols) == 1:
        return "normal"
    return "mixed"


@dataclass(frozen=True)
class Setup:
    """Everything public a model needs, fixed by the plan before any data are read."""

    model: str
    n: int | None
    columns: tuple[Column, ...]
    categorical: tuple[Column, ...]
    numeric: tuple[Column, ...]
    components: tuple[Component, ...]
    scales: tuple[Fraction, ...]
    post: str
    prior: tuple[float, ...]
    sets: int

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(c.size for c in self.categorical)

    @property
    def cells(self) -> int:
        return math.prod(self.shape)

    @property
    def lower(self) -> np.ndarray:
        return np.array([float(c.lower) for c in self.numeric])

    @property
    def upper(self) -> np.ndarray:
        return np.array([float(c.upper) for c in self.numeric])

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


class Modips(Synthesizer):
    """modips (Liu 2016): sanitized Bayesian sufficient statistics, a posterior draw, records; ε-DP.

    >>> from dipsy.privacy import PureDP
    >>> from dipsy.domain import Column, Domain
    >>> d = Domain((Column("x", "numeric", lower=0, upper=10, bins=(0, 5, 10)),))
    >>> plan = Modips(PureDP(1.0), sets=2, options={"model": "normal"}).plan(100, d)
    >>> [round(c["scale"], 6) for c in plan.parameters["sanitization"].values()]
    [0.4, 4.0]
    """

    name = "modips"
    summary = "Model-based DP synthesis (Liu 2016): Laplace-sanitized Bayesian sufficient statistics, posterior draw, records; ε-DP"
    definition = "pure-DP"
    neighbouring = SUBSTITUTE
    neighbourings = (SUBSTITUTE, ADD_REMOVE)
    options = (
        Option("model", _model, "bernoulli | normal | multinomial | mixed (default: chosen from the columns)"),
        Option("budget", lambda v: check_choice("budget", v, BUDGETS), "split (default: ε/m/J per component) or non-split (one scale: the L1 sensitivity of all statistics)"),
        Option("post", lambda v: check_choice("post", v, POSTS), "threshold (default: clamp to the bounds, free) or truncation (truncated Laplace, charged twice: scales doubled)"),
        Option("prior", lambda v: v, "Beta 'a,b' (bernoulli, default 1/3,1/3) or Dirichlet α (multinomial, mixed; default 1/3)"),
    )

    # -- plan ---------------------------------------------------------------------------------

    def setup(self, n: int, domain: Domain) -> Setup:
        """Check the columns against the model and derive its components (no data read)."""
        model = self.settings.get("model") or choose_model(domain)
        cols = domain.columns
        add_remove = self.neighbouring == ADD_REMOVE
        if add_remove and model != "multinomial":
            raise DipsyError(
                f"modips model={model} is private under substitution with n public only",
                "leave out --neighbouring (or use model=multinomial for add/remove)",
            )
        categorical = tuple(c for c in cols if c.is_categorical)
        numeric = tuple(c for c in cols if not c.is_categorical)
        where = ", ".join(c.name for c in cols)
        if model == "bernoulli":
            if len(cols) != 1 or not _is_cell_column(cols[0]) or cols[0].size != 2:
                raise DipsyError(f"model=bernoulli takes one column with two categories, not {where}", "choose one binary column with --columns")
            categorical, numeric = cols, ()
            components = M.bernoulli_components(n)
        elif model == "multinomial":
            if not all(_is_cell_column(c) for c in cols):
                raise DipsyError(f"model=multinomial takes categorical columns, not {where}", "leave out numeric columns or use model=mixed")
            categorical, numeric = cols, ()
            components = M.multinomial_components(None if add_remove else n, domain.cells())
        elif model == "normal":
            if len(cols) != 1 or cols[0].is_categorical:
                raise DipsyError(f"model=normal takes one numeric column, not {where}", "choose one numeric column with --columns")
            if n < 2:
                raise DipsyError("model=normal needs at least 2 rows", "check the data against the domain")
            components = M.normal_components(n, cols[0].lower, cols[0].upper)
        else:
            if not categorical or not numeric:
                raise DipsyError(f"model=mixed takes categorical and numeric columns, not {where}", "add both kinds with --columns")
            k = math.prod(c.size for c in categorical)
            if k < 2:
                raise DipsyError("model=mixed needs at least 2 cells in the categorical columns", "add a categorical column with two or more categories")
            if n - k < len(numeric):
                raise DipsyError(f"model=mixed needs n - K >= {len(numeric)} (n = {n}, K = {k} cells)", "use fewer categorical columns or more rows")
            lower = np.array([float(c.lower) for c in numeric])
            upper = np.array([float(c.upper) for c in numeric])
            components = M.mixed_components(n, k, lower, upper, tuple(c.name for c in numeric))
        if model != "multinomial":
            self.require_rows(n)
        prior = M.parse_prior(self.settings["prior"], model) if "prior" in self.settings else (() if model == "normal" else (DEFAULT_PRIOR,) * (2 if model == "bernoulli" else 1))
        post = self.settings.get("post", "threshold")
        epsilon_set = to_fraction(self.budget.epsilon, "epsilon") / self.sets
        scales = noise_scales(components, epsilon_set, self.settings.get("budget", "split"), post)
        return Setup(model, None if add_remove else n, cols, categorical, numeric, tuple(components), tuple(scales), post, prior, self.sets)

    def plan(self, n: int, domain: Domain) -> Plan:
        s = self.setup(n, domain)
        budget = self.settings.get("budget", "split")
        epsilon_set = self.budget.epsilon / self.sets
        losses = [component_loss(c, b, s.post) for c, b in zip(s.components, s.scales)]
        if sum(losses) > epsilon_set * (1 + 1e-9):  # a self-check of eqs. N1–N6, never expected to fire
            raise DipsyError(f"internal error: modips would spend {sum(losses)} > {epsilon_set} per set", "report this bug")
        sanitization = {
            c.name: {
                "coordinates": c.size,
                "sensitivity": float(c.sensitivity),
                "lower": c.lower,
                "upper": c.upper if math.isfinite(c.upper) else None,  # None: no upper bound (strict JSON)
                "noise": "discrete Laplace (exact)" if c.discrete else "Laplace (floating point)",
                "scale": float(b),
                "privacy_loss": loss,
            }
            for c, b, loss in zip(s.components, s.scales, losses)
        }
        names = ", ".join(c.name for c in s.components)
        continuous = any(not c.discrete for c in s.components)
        mechanism = (
            f"modips (Liu 2016; Bowen & Liu 2020), model={s.model}: per set, the Bayesian sufficient statistics ({names}) "
            f"get Laplace noise at their global sensitivities from the public bounds ({budget} budget over {len(s.components)} "
            f"component(s)), out-of-bound values are {'clamped to the bounds' if s.post == 'threshold' else 'avoided by drawing from the Laplace truncated to the bounds (scales doubled)'}, "
            "then theta* is drawn from the posterior given them and n records from f(x | theta*)"
            + (". Real-valued statistics use floating-point Laplace noise: ε-DP holds for the ideal real-valued mechanism (Mironov 2012)" if continuous else "")
        )
        public = (("the domain of the released columns (categories and bounds)",) if s.n is None else
                  (f"n = {n} (the number of rows)", "the domain of the released columns (categories and bounds)"))
        params: dict[str, Any] = {
            "model": s.model,
            "budget": budget,
            "post": s.post,
            "epsilon_per_set": epsilon_set,
            "sanitization": sanitization,
            "_setup": s,
        }
        if s.prior:
            params["prior"] = ",".join(f"{a:g}" for a in s.prior)
        if s.n is not None:
            params["n"] = n
        spends = self.equal_spends(f"sanitized {names}; posterior draw")
        return Plan(self.statement(n, mechanism, public), spends, params)

    # -- fit ----------------------------------------------------------------------------------

    def fit(self, engine: Engine, plan: Plan) -> "ModipsModel":
        s: Setup = plan.parameters["_setup"]
        if s.model in ("bernoulli", "multinomial"):
            counts = engine.contingency([c.name for c in s.columns], form="dense").counts.astype(np.int64)
            stats = [counts[1:2].reshape(()) if s.model == "bernoulli" else counts]
            rows = int(counts.sum())
        else:
            data = engine.values(s.names)
            rows = len(next(iter(data.values())))
            if s.model == "normal":
                stats = [np.asarray(v) for v in M.normal_statistics(data[s.columns[0].name])]
            else:
                cells = np.ravel_multi_index(tuple(data[c.name] for c in s.categorical), s.shape) if rows else np.zeros(0, np.int64)
                y = np.column_stack([data[c.name] for c in s.numeric]) if rows else np.zeros((0, len(s.numeric)))
                stats = M.mixed_statistics(cells, y, s.cells, (s.lower + s.upper) / 2)
        if s.n is not None and rows != s.n:
            raise DipsyError(f"the plan was made for n = {s.n} rows but the data have {rows}", "plan and fit on the same data")
        return ModipsModel(s, stats)


@dataclass(frozen=True, eq=False)
class ModipsModel(Model):
    """The exact sufficient statistics (private). Each :meth:`sample` sanitizes them afresh (one set)."""

    setup: Setup
    statistics: list[np.ndarray]
    _drawn: list[int] = field(default_factory=lambda: [0])

    def sanitized(self, rand: Randomness) -> list[np.ndarray]:
        """``s*``: one noisy, in-bound copy of the statistics (one set's worth of budget)."""
        s = self.setup
        if self._drawn[0] >= s.sets:
            raise DipsyError(f"the plan paid for {s.sets} set(s); a further one would overspend ε", "plan again with more sets")
        self._drawn[0] += 1
        return sanitize(self.statistics, s.components, s.scales, s.post, rand)

    def sample(self, rand: Randomness) -> pd.DataFrame:
        s = self.setup
        noisy = self.sanitized(rand)
        rng = rand.numpy
        if s.model == "bernoulli":
            theta = M.draw_beta(noisy[0], s.n, s.prior, rng)
            codes = (rng.random(s.n) < theta).astype(np.int64)
            return M.frame(M.records_from_cells(codes, s.columns, s.shape, rng), s.names)
        if s.model == "multinomial":
            theta = M.draw_dirichlet(noisy[0], s.prior[0], rng)
            n = s.n if s.n is not None else int(noisy[0].sum())
            return M.frame(M.records_from_cells(_cells(rng.multinomial(n, theta), rng), s.columns, s.shape, rng), s.names)
        if s.model == "normal":
            col = s.columns[0]
            mu, sigma2 = M.draw_normal(noisy[0], noisy[1], s.n, rng)
            x = M.truncated_normal(np.full(s.n, float(mu)), np.full(s.n, math.sqrt(float(sigma2))), float(col.lower), float(col.upper), rng)
            return pd.DataFrame({col.name: M.value_column(x, col)})
        return self._mixed(noisy, rng)

    def _mixed(self, noisy: list[np.ndarray], rng: np.random.Generator) -> pd.DataFrame:
        s = self.setup
        pi, mu, sigma = M.draw_mixed(noisy, s.n, s.lower, s.upper, s.prior[0], rng)
        cells = _cells(rng.multinomial(s.n, pi), rng)
        y = M.truncated_mvn(mu[cells], sigma, s.lower, s.upper, rng)
        columns = M.records_from_cells(cells, s.categorical, s.shape, rng)
        for j, c in enumerate(s.numeric):
            columns[c.name] = M.value_column(y[:, j], c)
        return M.frame(columns, s.names)


def _cells(counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Flat cell indices, each cell repeated by its count, shuffled."""
    cells = np.repeat(np.arange(counts.size), counts)
    rng.shuffle(cells)
    return cells
