r"""modips: model-based differentially private synthesis (Liu 2016, arXiv 1606.08052), as Bowen & Liu describe it.

Algorithm (S-003 §3.2, Figure 1; ``METHODS.md`` §2.2). For each set ``l = 1..m``, with budget ``ε/m``:

1. compute the model's Bayesian sufficient statistics ``s`` (:mod:`.models`);
2. sanitize them with the Laplace mechanism at their global sensitivities, derived from the public
   bounds of the domain, the budget split over the components or not (eqs. N1–N2 of
   :mod:`.noise`), and bring out-of-bound values back by thresholding (post-processing, free) or
   truncation (charged: scales doubled, eq. N6), giving ``s*_l``;
3. draw ``θ*_l ~ p(θ | s*_l)`` and ``n`` records ``x*_l ~ f(x | θ*_l)`` (post-processing of ``s*_l``).

How it runs on the measurement core
-----------------------------------
``plan`` builds, from the public domain (and ``n`` under substitution) only, ``m`` measurements:
set ``l``'s is the query "the sufficient statistics" (a
:class:`~dipsy.privacy.measurement.Statistic` whose ``compute`` reads ``engine.values`` or
``engine.contingency`` — :class:`SufficientStatistics`) with the mechanism
:class:`~.noise.Sanitization` (steps 2; its scales computed in its ``for_budget`` only). ``fit``
runs the ``m`` measurements through the session — each charged before it reads, each with fresh
noise — and keeps only their outputs ``s*_1..s*_m``. :meth:`ModipsModel.sample` does step 3 for
set ``k`` from ``s*_k``: post-processing, no read, no spend; ``Model.draw`` refuses a set past the
``m`` charged.

Privacy
-------
Definition: ε-DP. Each set is one measurement whose mechanism declares ``ε/m`` — the privacy map
``f · Σ_g Δ_g/b_g`` of :mod:`.noise` (``f = 2`` under truncation: the doubling is in the declared
cost), proven there, with the sensitivities ``Δ_g`` proven in :mod:`.models` — and step 3 is
post-processing. The ``m`` sets, each from fresh noise, are ε-DP together by sequential
composition; the statement is the sum of the measurements that ran. Neighbouring relation:
substitution with ``n`` public (all models); add/remove for ``model=multinomial``, where the plan
gets no ``n`` and needs none (counts' sensitivity 1, bounds ``[0, ∞)``; the records' number is
``n* = Σ_k y*_k``, a function of the noisy counts, and a noisy total of 0 gives an empty set
rather than an error). Public: ``n`` (under substitution) and the domain — categories and the
bounds of numeric columns, from which every sensitivity is derived. Counts get exact discrete
Laplace noise; real-valued statistics floating-point Laplace noise, for which the guarantee holds
for the ideal mechanism (Mironov 2012). Posterior and record draws are NumPy/SciPy floating-point
samplers of post-processing, as in the other posterior methods.

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
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...domain import Column, Domain
from ...errors import DipsyError, PrivacyError
from ...privacy.budget import PureDP
from ...privacy.measurement import Measurement, Statistic
from ...privacy.relation import ADD_REMOVE, SUBSTITUTE
from ...privacy.rng import Randomness
from ...privacy.session import Session
from ..base import Model, Option, Plan, Synthesizer
from . import models as M
from .noise import BUDGETS, POSTS, Component, Sanitization, check_choice, component_loss

MODELS = ("bernoulli", "normal", "multinomial", "mixed")
DEFAULT_PRIOR = 1 / 3


def _prior(value: Any) -> Any:
    """``prior=`` as given, once its numbers are read (a huge one refused before any work); the plan
    checks them against the model."""
    M.prior_numbers(value)
    return value


def _model(value: Any) -> str:
    return check_choice("model", value, MODELS)


def _is_cell_column(c: Column) -> bool:
    """Columns whose codes are cells: categorical, ordinal, or integer without bins."""
    return c.is_categorical or (c.kind == "integer" and c.bins is None)


def _size(c: Column) -> int:
    """The number of codes of a cell column (categorical or integer: only a numeric one has none)."""
    if c.size is None:
        raise DipsyError(f"column {c.name!r} is numeric and has no cells", "use model=normal or model=mixed for it")
    return c.size


def _bounds(c: Column) -> tuple[float, float]:
    """The public bounds of a numeric or integer column, as declared (the domain requires both)."""
    assert c.lower is not None and c.upper is not None, "Column checks the bounds of every non-categorical column"
    return c.lower, c.upper


def _public_n(n: int | None, model: str) -> int:
    """``n``, public under substitution: every model but multinomial needs it."""
    if n is None:
        raise DipsyError(f"modips model={model} needs the public number of rows n", "plan it under substitution, with n given")
    return n


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
    """Everything public a model needs, fixed by the plan before any data are read.

    ``n`` is the public number of rows under substitution, None under add/remove (multinomial only).
    """

    model: str
    n: int | None
    columns: tuple[Column, ...]
    categorical: tuple[Column, ...]
    numeric: tuple[Column, ...]
    components: tuple[Component, ...]
    post: str
    prior: tuple[float, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(_size(c) for c in self.categorical)

    @property
    def cells(self) -> int:
        return math.prod(self.shape)

    @property
    def lower(self) -> np.ndarray:
        return np.array([float(_bounds(c)[0]) for c in self.numeric])

    @property
    def upper(self) -> np.ndarray:
        return np.array([float(_bounds(c)[1]) for c in self.numeric])

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def rows(self) -> int:
        """The public ``n`` (every model but multinomial under add/remove has it)."""
        return _public_n(self.n, self.model)


@dataclass(frozen=True)
class SufficientStatistics:
    """``compute`` of the :class:`~dipsy.privacy.measurement.Statistic` every set measures: the
    model's exact sufficient statistics (private), one array per component of ``setup``.

    Counts come from ``engine.contingency``, the normal and mixed statistics from
    ``engine.values`` (sorted before summing: the same bits on every engine). Under substitution
    the rows must be the plan's public ``n``.
    """

    setup: Setup

    def __call__(self, engine: Any) -> tuple[np.ndarray, ...]:
        s = self.setup
        if s.model in ("bernoulli", "multinomial"):
            counts = np.asarray(engine.contingency(list(s.names), form="dense").counts, dtype=np.int64)
            stats: tuple[np.ndarray, ...] = (counts[1:2].reshape(()),) if s.model == "bernoulli" else (counts,)
            rows = int(counts.sum())
        else:
            data = engine.values(s.names)
            rows = len(next(iter(data.values())))
            if s.model == "normal":
                stats = tuple(np.asarray(v) for v in M.normal_statistics(data[s.columns[0].name]))
            else:
                cells = (
                    np.ravel_multi_index(tuple(data[c.name] for c in s.categorical), s.shape) if rows else np.zeros(0, np.int64)
                )
                y = np.column_stack([data[c.name] for c in s.numeric]) if rows else np.zeros((0, len(s.numeric)))
                stats = tuple(M.mixed_statistics(cells, y, s.cells, (s.lower + s.upper) / 2))
        if s.n is not None and rows != s.n:
            raise DipsyError(f"the plan was made for n = {s.n} rows but the data have {rows}", "plan and fit on the same data")
        return stats


class Modips(Synthesizer):
    """modips (Liu 2016): sanitized Bayesian sufficient statistics, a posterior draw, records; ε-DP.

    Examples
    --------
    >>> from dipsy.privacy import PureDP
    >>> from dipsy.domain import Column, Domain
    >>> d = Domain((Column("x", "numeric", lower=0, upper=10, bins=(0, 5, 10)),))
    >>> plan = Modips(PureDP(1.0), sets=2, options={"model": "normal"}).plan(100, d)
    >>> [round(c["scale"], 6) for c in plan.parameters["sanitization"].values()]
    [0.4, 4.0]
    >>> len(plan.measurements), plan.measurements[0].cost
    (2, PureDP(epsilon=0.5))
    """

    budget: PureDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "modips"
    summary = (
        "Model-based DP synthesis (Liu 2016): Laplace-sanitized Bayesian sufficient statistics, posterior draw, records; ε-DP"
    )
    definition = "pure-DP"
    relations = (SUBSTITUTE, ADD_REMOVE)
    options = (
        Option("model", _model, "bernoulli | normal | multinomial | mixed (default: chosen from the columns)"),
        Option(
            "budget",
            lambda v: check_choice("budget", v, BUDGETS),
            "split (default: ε/m/J per component) or non-split (one scale: the L1 sensitivity of all statistics)",
        ),
        Option(
            "post",
            lambda v: check_choice("post", v, POSTS),
            "threshold (default: clamp to the bounds, free) or truncation (truncated Laplace, charged twice: scales doubled)",
        ),
        Option("prior", _prior, "Beta 'a,b' (bernoulli, default 1/3,1/3) or Dirichlet α (multinomial, mixed; default 1/3)"),
    )

    # -- plan ---------------------------------------------------------------------------------

    def setup(self, n: int | None, domain: Domain) -> Setup:
        """Check the columns against the model and derive its components (no data read).

        ``n`` is used only under substitution; under add/remove (multinomial only) it is None.
        """
        model = self.settings.get("model") or choose_model(domain)
        cols = domain.columns
        add_remove = not self.relation.fixes_n
        if add_remove and model != "multinomial":
            raise DipsyError(
                f"modips model={model} is private under substitution with n public only",
                "leave out --neighbouring (or use model=multinomial for add/remove)",
            )
        if add_remove:
            n = None
        categorical = tuple(c for c in cols if c.is_categorical)
        numeric = tuple(c for c in cols if not c.is_categorical)
        where = ", ".join(c.name for c in cols)
        if model in ("normal", "mixed"):
            for c in numeric:  # read as numbers (sums, sums of squares, bounds): a state is no number
                c.refuse_missing(
                    f"modips model={model} (sums of its values between the bounds)",
                    "model=normal and model=mixed do not yet synthesize missing states: give the column bins and use "
                    "model=multinomial or a count method, leave the column out, or drop missing: and pass --on-invalid drop",
                )
        if model == "bernoulli":
            if len(cols) != 1 or not _is_cell_column(cols[0]) or cols[0].size != 2:
                raise DipsyError(
                    f"model=bernoulli takes one column with two categories, not {where}",
                    "choose one binary column with --columns",
                )
            categorical, numeric = cols, ()
            self.require_rows(n)
            components = M.bernoulli_components(_public_n(n, model))
        elif model == "multinomial":
            if not all(_is_cell_column(c) for c in cols):
                raise DipsyError(
                    f"model=multinomial takes categorical columns, not {where}", "leave out numeric columns or use model=mixed"
                )
            categorical, numeric = cols, ()
            components = M.multinomial_components(n, domain.cells())
        elif model == "normal":
            if len(cols) != 1 or cols[0].is_categorical:
                raise DipsyError(
                    f"model=normal takes one numeric column, not {where}", "choose one numeric column with --columns"
                )
            n = _public_n(n, model)
            if n < 2:
                raise DipsyError("model=normal needs at least 2 rows", "check the data against the domain")
            components = M.normal_components(n, *_bounds(cols[0]))
        else:
            if not categorical or not numeric:
                raise DipsyError(
                    f"model=mixed takes categorical and numeric columns, not {where}", "add both kinds with --columns"
                )
            n = _public_n(n, model)
            k = math.prod(_size(c) for c in categorical)
            if k < 2:
                raise DipsyError(
                    "model=mixed needs at least 2 cells in the categorical columns",
                    "add a categorical column with two or more categories",
                )
            if n - k < len(numeric):
                raise DipsyError(
                    f"model=mixed needs n - K >= {len(numeric)} (n = {n}, K = {k} cells)",
                    "use fewer categorical columns or more rows",
                )
            lower = np.array([float(_bounds(c)[0]) for c in numeric])
            upper = np.array([float(_bounds(c)[1]) for c in numeric])
            components = M.mixed_components(n, k, lower, upper, tuple(c.name for c in numeric))
        prior = (
            M.parse_prior(self.settings["prior"], model)
            if "prior" in self.settings
            else (() if model == "normal" else (DEFAULT_PRIOR,) * (2 if model == "bernoulli" else 1))
        )
        post = self.settings.get("post", "threshold")
        return Setup(model, n, cols, categorical, numeric, tuple(components), post, prior)

    def plan(self, n: int | None, domain: Domain) -> Plan:
        s = self.setup(n, domain)
        budget = self.settings.get("budget", "split")
        sanitizer = Sanitization.for_budget(self.budget, s.components, budget, s.post, sets=self.sets)
        epsilon_set = self.budget.epsilon / self.sets
        losses = [component_loss(c, b, s.post) for c, b in zip(s.components, sanitizer.scales)]
        # a self-check of eqs. N1–N6, never expected to fire: what each set declares, and its exact loss
        if sanitizer.cost.epsilon > epsilon_set * (1 + 1e-9) or sum(losses) > sanitizer.cost.epsilon * (1 + 1e-9):
            raise DipsyError(
                f"internal error: modips would spend {sanitizer.cost} (exact loss {sum(losses)}) > {epsilon_set} per set",
                "report this bug",
            )
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
            for c, b, loss in zip(s.components, sanitizer.scales, losses)
        }
        names = ", ".join(c.name for c in s.components)
        continuous = any(not c.discrete for c in s.components)
        mechanism = (
            f"modips (Liu 2016; Bowen & Liu 2020), model={s.model}: per set, the Bayesian sufficient statistics ({names}) "
            f"get Laplace noise at their global sensitivities from the public bounds ({budget} budget over {len(s.components)} "
            f"component(s)), out-of-bound values are {'clamped to the bounds' if s.post == 'threshold' else 'avoided by drawing from the Laplace truncated to the bounds (scales doubled)'}, "
            f"then theta* is drawn from the posterior given them and {'n' if s.n is not None else 'n* = sum of the noisy counts'} records from f(x | theta*)"
            + (
                ". Real-valued statistics use floating-point Laplace noise: ε-DP holds for the ideal real-valued mechanism (Mironov 2012)"
                if continuous
                else ""
            )
        )
        params: dict[str, Any] = {
            "model": s.model,
            "budget": budget,
            "post": s.post,
            "epsilon_per_set": epsilon_set,
            "sanitization": sanitization,
        }
        if s.prior:
            params["prior"] = ",".join(f"{a:g}" for a in s.prior)
        if s.n is not None:
            params["n"] = s.n
        query = Statistic(f"the Bayesian sufficient statistics of model={s.model}: {names}", SufficientStatistics(s))
        measurements = tuple(
            Measurement(label, query, sanitizer, self.relation, self.set_index(k))
            for k, label in enumerate(self.per_set_labels(f"sanitized {names}"))
        )
        return Plan(measurements, self.relation, self.public(s.n), mechanism, self.composition(), params)

    # -- fit ----------------------------------------------------------------------------------

    def fit(self, session: Session, plan: Plan) -> ModipsModel:
        """Measure every set's sanitized statistics (fresh noise each); keep only those."""
        compute = plan.measurements[0].query_as(Statistic).compute
        if not isinstance(compute, SufficientStatistics):
            raise PrivacyError(
                "the plan's statistic is not modips's sufficient statistics", "fit a plan with the method that made it"
            )
        setup = compute.setup
        outputs = tuple(tuple(np.asarray(v) for v in session.measure(m)) for m in plan.measurements)
        return ModipsModel(setup, outputs)


@dataclass(frozen=True, eq=False)
class ModipsModel(Model):
    """The sanitized statistics ``s*_k`` of each charged set (measured outputs) and the public setup.

    :meth:`sample` draws set ``k``'s posterior and records from ``s*_k`` only: post-processing.
    """

    setup: Setup
    outputs: tuple[tuple[np.ndarray, ...], ...]

    @property
    def sets(self) -> int:
        return len(self.outputs)

    def sanitized(self, k: int) -> tuple[np.ndarray, ...]:
        """``s*_k``: set ``k``'s noisy, in-bound statistics, one array per component."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < self.sets:
            raise PrivacyError(
                f"set {k!r} was not charged: this model holds sets 0..{self.sets - 1}",
                "plan the release with more sets (each costs its share of the budget)",
            )
        return self.outputs[k]

    def sample(self, k: int, rand: Randomness) -> pd.DataFrame:
        s = self.setup
        noisy = self.sanitized(k)
        rng = rand.numpy
        if s.model == "bernoulli":
            a, b = s.prior  # Beta(α, β): the plan parses two numbers for bernoulli
            theta = M.draw_beta(noisy[0], s.rows, (a, b), rng)
            codes = (rng.random(s.rows) < theta).astype(np.int64)
            return M.frame(M.records_from_cells(codes, s.columns, s.shape, rng), s.names)
        if s.model == "multinomial":
            theta = M.draw_dirichlet(noisy[0], s.prior[0], rng)
            # add/remove: n is private; n* is the noisy counts' total (>= 0: they are in bounds), 0 gives no records
            n = s.n if s.n is not None else int(noisy[0].sum())
            return M.frame(M.records_from_cells(_cells(rng.multinomial(n, theta), rng), s.columns, s.shape, rng), s.names)
        if s.model == "normal":
            col = s.columns[0]
            mu, sigma2 = M.draw_normal(noisy[0], noisy[1], s.rows, rng)
            x = M.truncated_normal(
                np.full(s.rows, float(mu)),
                np.full(s.rows, math.sqrt(float(sigma2))),
                float(_bounds(col)[0]),
                float(_bounds(col)[1]),
                rng,
            )
            return pd.DataFrame({col.name: M.value_column(x, col)})
        return self._mixed(noisy, rng)

    def _mixed(self, noisy: tuple[np.ndarray, ...], rng: np.random.Generator) -> pd.DataFrame:
        s = self.setup
        pi, mu, sigma = M.draw_mixed(list(noisy), s.rows, s.lower, s.upper, s.prior[0], rng)
        cells = _cells(rng.multinomial(s.rows, pi), rng)
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
