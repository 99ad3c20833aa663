r"""DPSyn as submitted to the NIST 2020 Differential Privacy Temporal Map challenge, sprint 2.

Li, Li & Wang, "DPSyn" (write-up and code ``agl-c/deid2_dpsyn`` @7d7bf0d; METHODS.md §4.3–4.4):
a public data set of the same kind is free to use; the confidential data give a noisy count per
group (PUMA × YEAR in the challenge) and, when ε allows, noisy one-way or two-way marginals of the
other columns. Each group's records are then chosen from a pool so that their marginals match the
targets, and one set is reused for all groups of equal (rounded) size.

**Regimes** (θ = most records of one individual; ``ε₀ = θ/1400`` for the noisy total, ``ε₁ = θ/50``,
``ε₂ = θ/35``, ``ε₃ = θ/25`` for the group counts):

1. ``ε < ε₂``: all of ε on the group counts; records from public marginals only.
2. otherwise ``Ñ = N + Lap(θ/ε₀)``, ``τ₁ = 1500θ/Ñ``, ``τ₂ = 6τ₁``:

   a. ``ε < ε₀ + ε₁ + τ₁``: the group counts with ``ε − ε₀``; public marginals only;
   b. ``ε < ε₀ + ε₁ + τ₂``: ``x = ε − ε₀ − ε₁ − τ₁``, ``y = min(ε₃, ε₁ + x/2)``: group counts with y,
      every one-way marginal with ``ε − ε₀ − y`` split equally (Laplace, scale ``kθ/(ε − ε₀ − y)``);
   c. else ``x = ε − ε₀ − ε₁ − τ₁`` (the code; the write-up says τ₂), ``y`` as above: group counts
      with y, every two-way marginal by the Gaussian mechanism with ``(ε − ε₀ − y, δ)`` through
      zCDP, the ρ split equally (the write-up converts with Bun & Steinke; dipsy with the tighter
      Canonne, Kamath & Steinke conversion, which is valid for the same (ε, δ)).

**Guarantee.** Every count has sensitivity θ under adding or removing one individual: a group
count vector and each marginal move by at most θ in L1 and L2. The discrete Laplace with scale
θ/ε is ε-DP (CKS 2020; :func:`dipsy.privacy.samplers.discrete_laplace`), k of them at ε/k compose
to ε; the discrete Gaussian with ``θ²/(2σ²) = ρ'`` is ρ'-zCDP, the k two-way marginals together
``ρ``-zCDP, hence ``(ε − ε₀ − y, δ)``-DP. The regime is chosen from Ñ only (post-processing), and
basic composition of (ε₀, 0), (y, 0) and the marginals' part gives (ε, δ)-DP in every branch
(Dwork & Roth 2014, Thm 3.16, adaptive). Public: the domain, θ, and the public data set.

The thresholds were made for the challenge (θ = 7, about 10⁶ rows). The noisy total's scale θ/ε₀ =
1400 does not shrink with the data, so on small files the regime itself is noisy (at n ≈ 5,600,
θ = 1, ε = 1 the run leaves the one-way regime about 6 % of the time), and as in the challenge
every group gets the same distribution, scaled to its size.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...domain import Domain
from ...engine import Engine, engine_for
from ...errors import DipsyError
from ...privacy import ApproxDP, Spend
from ...privacy.conversions import approx_to_zcdp
from ...privacy.mechanisms import discrete_gaussian_counts, plan_discrete_gaussian
from ...privacy.rng import Randomness
from ...privacy.samplers import discrete_laplace, to_fraction
from ..base import Model, Option, Plan, Statement, Synthesizer, individual_relation, whole
from .consistency import make_consistent
from .gum import initial_records, update_records
from .marginal import Marginal, exact_counts

logger = logging.getLogger(__name__)

#: Weight of a public marginal in consistency, relative to the noisy one-way marginals (the code's 0.01).
PUBLIC_WEIGHT = 0.01


@dataclass(frozen=True)
class Regime:
    """What a run measures: ``"public"``, ``"one-way"`` or ``"two-way"``, and the ε of each part."""

    name: str
    total_epsilon: float  # ε₀ for the noisy total, 0 when not measured
    group_epsilon: float  # y, or all of ε
    marginal_epsilon: float  # ε − ε₀ − y for the one-/two-way marginals, 0 in the public regime


def thresholds(theta: int) -> tuple[float, float, float, float]:
    """``(ε₀, ε₁, ε₂, ε₃) = (θ/1400, θ/50, θ/35, θ/25)`` (METHODS.md §4.3).

    >>> thresholds(7)
    (0.005, 0.14, 0.2, 0.28)
    """
    return theta / 1400, theta / 50, theta / 35, theta / 25


def regime(epsilon: float, theta: int, noisy_total: float | None) -> Regime:
    """The branch of METHODS.md §4.3 for ε, θ and the noisy total Ñ (None in branch 1).

    With θ = 7 and Ñ = 10⁶ (METHODS.md's example: τ₁ = 0.0105, τ₂ = 0.063), ε = 0.1, 0.2 and 0.25
    fall in the three regimes:

    >>> regime(0.1, 7, None).name, regime(0.2, 7, 1_000_000).name, regime(0.25, 7, 1_000_000).name
    ('public', 'one-way', 'two-way')
    """
    e0, e1, e2, e3 = thresholds(theta)
    if epsilon < e2:
        return Regime("public", 0.0, epsilon, 0.0)
    if noisy_total is None:
        raise ValueError("the noisy total is needed when ε >= ε₂")
    tau1 = 1500 * theta / max(noisy_total, 1.0)
    tau2 = 6 * tau1
    if epsilon < e0 + e1 + tau1:
        return Regime("public", e0, epsilon - e0, 0.0)
    x = epsilon - e0 - e1 - tau1  # the code's x in both branches (the write-up has τ₂ in the last)
    y = min(e3, e1 + x / 2)
    name = "one-way" if epsilon < e0 + e1 + tau2 else "two-way"
    return Regime(name, e0, y, epsilon - e0 - y)


def post_process_groups(noisy: np.ndarray, least: int, multiple: int) -> np.ndarray:
    """Group sizes from noisy counts: at least ``least``, rounded to the nearest ``multiple`` (§4.4).

    When ``least`` is not a multiple, the smallest size is the next multiple above it (rounding
    ``least`` to the nearest one could fall below it, even to 0).

    >>> post_process_groups(np.array([120, 1234, 1260]), 300, 100).tolist()
    [300, 1200, 1300]
    >>> post_process_groups(np.array([-5, 20, 170]), 30, 100).tolist()
    [100, 100, 200]
    """
    raised = np.maximum(np.asarray(noisy, dtype=float), least)
    rounded = np.floor(raised / multiple + 0.5) * multiple
    return np.maximum(rounded, math.ceil(least / multiple) * multiple).astype(np.int64)


def swap_select(pool: np.ndarray, targets: list[Marginal], n: int, rounds: int, rng: np.random.Generator,
                tolerance: float = 1e-3) -> np.ndarray:
    """n records of ``pool`` whose marginals approach ``targets``, by DPSyn's swapping (§4.4).

    D = a random n of the pool, R = the rest. Each round rescales every target to |D|, marks the
    cells where D has more than one record too many (over) or too few (under), scores each D
    record by the number of its marginals whose cell is over minus those under (R records the
    other way round), and swaps the best D record with the best R record (ties at random). It
    stops after ``rounds`` rounds, or when the total normalised L1 error improved by less than
    ``tolerance`` over the last 10 rounds. Vectorised: one bincount and one gather per round.
    """
    size = len(pool)
    if n <= 0:  # a group of size 0 (least = 0): nothing to choose
        return pool[:0]
    if n >= size:
        return pool[rng.permutation(size)[:n]] if n == size else pool[rng.integers(0, size, n)]
    offsets = np.cumsum([0] + [t.cells for t in targets])
    cells = np.stack([np.ravel_multi_index(tuple(pool[:, a] for a in t.attributes), t.counts.shape) + off
                      for t, off in zip(targets, offsets[:-1])])  # (marginals, pool)
    goal = np.concatenate([np.maximum(t.counts.ravel(), 0) / max(t.counts.clip(0).sum(), 1e-12) for t in targets]) * n
    order = rng.permutation(size)
    inside = np.zeros(size, dtype=bool)
    inside[order[:n]] = True
    current = np.bincount(cells[:, inside].ravel(), minlength=offsets[-1]).astype(float)
    history = []
    for t in range(rounds):
        error = np.abs(current - goal).sum() / (n * len(targets))
        history.append(error)
        if t >= 10 and history[-11] - error < tolerance:
            break
        flag = (current > goal + 1).astype(np.int64) - (current < goal - 1)
        score = flag[cells].sum(axis=0) + rng.random(size) * 0.5  # the fraction breaks ties at random
        score = np.where(inside, score, -score + 0.5)
        out = int(np.argmax(np.where(inside, score, -np.inf)))
        into = int(np.argmax(np.where(inside, -np.inf, score)))
        if score[out] <= 0.5 and score[into] <= 0.5:  # nothing to gain
            break
        inside[out], inside[into] = False, True
        np.subtract.at(current, cells[:, out], 1)
        np.add.at(current, cells[:, into], 1)
    return pool[inside]


def _path(value: Any) -> Path:
    path = Path(str(value)).expanduser()
    if not path.is_file():
        raise DipsyError(f"the public data file {str(path)!r} does not exist", "pass public=PATH of a CSV or Parquet file")
    return path


def _names(value: Any) -> tuple[str, ...]:
    names = tuple(x.strip() for x in (value.split(",") if isinstance(value, str) else value) if x.strip())
    if not names:
        raise DipsyError("option groups names no column", "e.g. groups=PUMA or groups=PUMA,YEAR")
    return names


class DPSyn(Synthesizer):
    """DPSyn, NIST 2020 sprint 2: public data, noisy group counts, noisy marginals by regime."""

    name = "dpsyn"
    summary = ("DPSyn (NIST 2020 challenge): public data, noisy group sizes, noisy 1- or 2-way marginals by ε regime, "
               "records swapped toward them per group; (ε, δ)-DP, one set")
    definition = "approximate-DP"
    neighbouring = individual_relation(1)
    multiple_sets = False
    options = (
        Option("public", _path, "a public data set of the same columns (CSV or Parquet): its statistics are free (required)"),
        Option("groups", _names, "columns whose cells are synthesized one by one, e.g. PUMA (default: one group)"),
        Option("theta", whole("theta", 1, 7), "most records one individual may own: the sensitivity of every count (default 1)"),
        Option("least", whole("least", 0, 300), "smallest group size synthesized (default 300)"),
        Option("multiple", whole("multiple", 1, 100), "group sizes are rounded to this multiple (default 10 with public marginals only, else 100)"),
        Option("pool", whole("pool", 1, 10000), "candidate records each group is chosen from (default 10000)"),
        Option("iterations", whole("iterations", 0, 60), "GUM update rounds for the pool (default 60)"),
    )

    def plan(self, n: int, domain: Domain) -> Plan:
        if "public" not in self.settings:
            raise DipsyError("dpsyn needs a public data set", "pass --option public=PATH (a CSV or Parquet of the same columns)")
        groups = self.settings.get("groups", ())
        unknown = [g for g in groups if g not in domain.names]
        if unknown:
            raise DipsyError(f"group column {unknown[0]!r} is not in the domain", f"choose from {', '.join(domain.names)}")
        rest = [c for c in domain.names if c not in groups]
        if not rest:
            raise DipsyError("every column is a group column; nothing is left to synthesize", "leave some columns out of groups")
        domain.shape(domain.names)  # every column needs cells (numeric columns need bins)
        theta = self.settings.get("theta", 1)
        epsilon, delta = self.budget.epsilon, self.budget.delta
        e0, _, e2, _ = thresholds(theta)
        if epsilon < e2:
            spends = (Spend(f"{self.name}: group counts, discrete Laplace scale θ/ε", ApproxDP(epsilon, 0.0)),)
        else:
            spends = (Spend(f"{self.name}: noisy total, discrete Laplace scale θ/ε₀ = {theta / e0:g}", ApproxDP(e0, 0.0)),
                      Spend(f"{self.name}: group counts and marginals, split by the regime the noisy total picks",
                            ApproxDP(epsilon - e0, delta)))
        mechanism = ("DPSyn (Li, Li & Wang, NIST 2020 sprint 2): discrete Laplace group counts and one-way marginals, or "
                     "discrete Gaussian two-way marginals under zCDP, by the ε regime; the public data set and all "
                     "synthesis from the noisy values are free")
        statement = Statement(self.definition, self.budget, self.budget, 1, individual_relation(theta),
                              ("the domain (categories and bins of every column)", f"θ = {theta}, the most rows one individual owns",
                               f"the public data set {self.settings['public'].name}"),
                              mechanism, "basic composition of the noisy total, the group counts and the marginals (adaptive)")
        params = {"theta": theta, "groups": list(groups), "public": str(self.settings["public"]),
                  "thresholds": dict(zip(("epsilon_0", "epsilon_1", "epsilon_2", "epsilon_3"), thresholds(theta))),
                  "_settings": dict(self.settings), "_epsilon": epsilon, "_delta": delta}
        return Plan(statement, spends, params)

    def fit(self, engine: Engine, plan: Plan) -> "DPSynModel":
        self.require_rows(engine.num_rows())
        public = engine_for(plan.parameters["public"], engine.domain, on_invalid="drop")
        if public.num_rows() < 1:
            raise DipsyError("the public data set has no rows that match the domain", "check it against the domain")
        return DPSynModel(engine, public, plan.parameters)


class DPSynModel(Model):
    """Private: holds the confidential engine. Its one :meth:`sample` makes the measurements."""

    def __init__(self, engine: Engine, public: Engine, parameters: dict) -> None:
        self.engine, self.public, self.p = engine, public, parameters

    def sample(self, rand: Randomness) -> dict[str, np.ndarray]:
        s = self.p["_settings"]
        theta, epsilon, delta = s.get("theta", 1), self.p["_epsilon"], self.p["_delta"]
        domain = self.engine.domain
        names = domain.names
        sizes = domain.shape(names)
        group_idx = tuple(names.index(g) for g in s.get("groups", ()))
        rest = tuple(i for i in range(len(names)) if i not in group_idx)

        # the regime: from ε alone, or from the noisy total (ε₀)
        noisy_total = None
        if epsilon >= thresholds(theta)[2]:
            e0 = thresholds(theta)[0]
            n = int(self.engine.num_rows())
            noisy_total = float(n + discrete_laplace(to_fraction(theta) / to_fraction(e0), 1, rand)[0])
        r = regime(epsilon, theta, noisy_total)
        logger.info("dpsyn regime %s: group counts ε = %.4g, marginals ε = %.4g", r.name, r.group_epsilon, r.marginal_epsilon)

        # noisy group counts (Laplace, sensitivity θ), then sizes per §4.4
        scale = to_fraction(theta) / to_fraction(r.group_epsilon)
        if group_idx:
            counts = exact_counts(self.engine, group_idx).ravel()
        else:
            counts = np.array([self.engine.num_rows()])
        noisy_groups = counts + discrete_laplace(scale, counts.shape, rand)
        multiple = s.get("multiple", 10 if r.name == "public" else 100)
        group_sizes = post_process_groups(noisy_groups, s.get("least", 300), multiple)

        self.report(f"dpsyn: {r.name} regime, the marginals")
        targets, pool_targets = self._targets(r, rest, sizes, delta, theta, rand)
        rng = rand.numpy
        pool_size = max(s.get("pool", 10000), 1)
        pool = None
        by_size: dict[int, np.ndarray] = {}  # one set per distinct size, reused for every group of that size
        distinct = sorted(set(group_sizes.tolist()))
        for k, size in enumerate(distinct):
            self.report(f"dpsyn: records for groups of {size}", k, len(distinct))
            if size >= pool_size:  # GUM works well at this size: synthesize it directly (§4.4's remark)
                by_size[size] = self._pool(r, pool_targets, rest, sizes, size, rng, s.get("iterations", 60))
                continue
            if pool is None:
                pool = self._pool(r, pool_targets, rest, sizes, pool_size, rng, s.get("iterations", 60))
            by_size[size] = swap_select(pool, targets, size, max(size // 3, 1), rng)
        parts = []
        group_cells = np.array(np.unravel_index(np.arange(len(group_sizes)), [sizes[g] for g in group_idx])).T if group_idx else [()]
        for cell, size in zip(group_cells, group_sizes.tolist()):
            block = by_size[size].copy()
            for g, code in zip(group_idx, cell):
                block[:, g] = code
            parts.append(block)
        records = np.concatenate(parts) if parts else np.zeros((0, len(names)), dtype=np.int64)
        return {name: records[:, i].astype(np.int64) for i, name in enumerate(names)}

    def _targets(self, r: Regime, rest, sizes, delta, theta, rand) -> tuple[list[Marginal], list[Marginal]]:
        """The swap targets and the pool's GUM targets of the regime (consistent, non-negative)."""
        pairs = [(a, b) for i, a in enumerate(rest) for b in rest[i + 1:]]
        if not pairs and r.name != "one-way":  # one column besides the groups: its one-way marginal is the target
            pairs = [(a,) for a in rest]
        public_two = [Marginal(p, exact_counts(self.public, p).astype(float)) for p in pairs]
        if r.name == "public":
            return public_two, public_two
        if r.name == "one-way":
            k = len(rest)
            scale = to_fraction(k * theta) / to_fraction(r.marginal_epsilon)
            weight = 1 / (4 * float(scale) ** 2)  # 1/(2 var) with var ≈ 2 b²: an inverse-variance weight
            one = [Marginal((a,), (exact_counts(self.engine, (a,)) + discrete_laplace(scale, sizes[a], rand)).astype(float), weight)
                   for a in rest]
            total = np.mean([m.total for m in one])
            public = [Marginal(m.attributes, m.counts * total / max(m.total, 1e-12), PUBLIC_WEIGHT * weight) for m in public_two]
            consistent = make_consistent(one + public)
            return consistent[:k], consistent
        rho = approx_to_zcdp(r.marginal_epsilon, delta)
        plan = plan_discrete_gaussian(rho / len(pairs), theta)
        noisy = [Marginal(p, discrete_gaussian_counts(exact_counts(self.engine, p), plan, rand).astype(float), plan.spend.rho)
                 for p in pairs]
        consistent = make_consistent(noisy)
        return consistent, consistent

    def _pool(self, r: Regime, targets: list[Marginal], rest, sizes, size: int, rng, iterations: int) -> np.ndarray:
        """Candidate records: a sample of the public data (public regime) or GUM from the targets."""
        d = len(sizes)
        if r.name == "public":
            table = self.public.contingency(self.public.domain.names, form="sparse")
            public = np.stack(np.unravel_index(np.repeat(table.cells, table.counts), table.shape), axis=1)
            return public[rng.integers(0, len(public), size)] if size > len(public) else public[rng.permutation(len(public))[:size]]
        one = [m for m in targets if len(m.attributes) == 1]
        if not one:  # two-way targets: their one-way projections, consistent already
            one = [next(m for m in targets if a in m.attributes).project((a,)) for a in rest]
        full = [Marginal((a,), np.ones(sizes[a])) for a in range(d) if a not in rest]
        records = initial_records(sorted(one + full, key=lambda m: m.attributes), sizes, size, rng)
        records, _ = update_records(records, [m for m in targets if len(m.attributes) > 1] or one, sizes, iterations, rng=rng)
        return records
