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
      every one-way marginal with ``ε − ε₀ − y`` split equally (discrete Laplace, scale
      ``kθ/(ε − ε₀ − y)``);
   c. else ``x = ε − ε₀ − ε₁ − τ``, ``y`` as above: group counts with y, every two-way marginal by
      the discrete Gaussian mechanism, with the ρ that ``(ε − ε₀ − y, δ)`` allows split equally.

**Two departures from the write-up, both options.** *τ in regime c* (option ``tau``): the
write-up's rule is ``x = ε − ε₀ − ε₁ − τ₂``; the code the team submitted (``sample_parallel.py``
@7d7bf0d) has ``x = ε − ε₀ − ε₁ − τ₁``. dipsy follows the submitted code by default
(``tau=tau1``); ``tau=tau2`` is the write-up's rule. At ε = 0.25, θ = 7, Ñ = 10⁶ the group
counts get y = 0.18725 (tau1) or 0.161 (tau2). The code's rule keeps y continuous where regime b
turns into c (ε = ε₀ + ε₁ + τ₂); the write-up's drops it there by ``(τ₂ − τ₁)/2``. *The
conversion* (option ``conversion``): the write-up (footnote 1) turns ``(ε', δ)`` into ρ by Bun &
Steinke 2016, Prop. 1.3, ``sqrt(ρ) = sqrt(ε' + log(1/δ)) − sqrt(log(1/δ))``; dipsy by default
takes the largest ρ that Canonne, Kamath & Steinke 2020, §2.3 convert back to ``(ε', δ)``
(``conversion=cks``), valid for the same (ε', δ) and larger (1.10–1.44 times at the challenge's
δ = 3.45·10⁻¹¹ and ε from 0.25 to 10), so the two-way marginals get less noise;
``conversion=bun-steinke`` spends the write-up's smaller ρ (still within ``(ε', δ)``: the
Bun–Steinke bound is never tighter than CKS).

**Measurements.** :meth:`DPSyn.plan` fixes, before any data are read, what does not depend on
noisy values: in regime 1 the group counts with all of ε; otherwise the noisy total with ε₀, and
an *adaptive* total ``(ε − ε₀, δ)`` for what the regime then measures (the group counts and the
marginals). :meth:`DPSyn.fit` runs everything through the session, whose privacy filter admits
each adaptive measurement only while the composed total stays within the declared one. The model
keeps only the noisy counts and marginals, the regime (a function of Ñ and public inputs, so
public) and the public data's statistics; :meth:`DPSynModel.sample` is post-processing, the
domain's edit rules (public) held at 0 in its targets included (:func:`~.marginal.held_at_zero`).

**Guarantee.** Every count has sensitivity θ under adding or removing one individual: the total,
a group count vector and each marginal move by at most θ in L1 and L2. The discrete Laplace with
scale θ/ε is ε-DP (CKS 2020; :class:`~dipsy.privacy.measurement.DiscreteLaplace`), k of them at
ε/k compose to ε; the discrete Gaussian with ``θ²/(2σ²) = ρ'`` is ρ'-zCDP
(:class:`~dipsy.privacy.measurement.DiscreteGaussian`, σ² rounded up), the k two-way marginals
together at most ``ρ = approx_to_zcdp(ε − ε₀ − y, δ)`` (CKS; with ``conversion=bun-steinke`` the
smaller Bun–Steinke ρ, which CKS also converts to at most ``ε − ε₀ − y``). The session adds these mixed spends by
:func:`dipsy.privacy.composition.total_as`: the ε-DP spends (ε₀, y, the one-way marginals) add up,
and the zCDP part is added as ρ and converted once, at the δ the (ε, δ) budget leaves — all of δ,
since no other spend uses any — to at most ``ε − ε₀ − y``; basic composition then gives (ε, δ)-DP
in every branch (Dwork & Roth 2014, Thm 3.16, adaptive; the regime is chosen from Ñ only). What
ran is what the statement states: (ε', 0)-DP with ε' ≤ ε in the branches without a Gaussian.
Public: the domain, θ, and the public data set (read directly, not through the session: its
statistics are free).

**m sets** (``--sets m``). Each set is its own complete run at ``(ε/m, δ/m)``: its own regime
(regime 1 when ``ε/m < ε₂``, else from its own noisy total Ñ_k), its own noisy group counts and
marginals, its own pool and records. The plan declares every set before any read: its group
counts (regime 1) or its noisy total, and, from ε₂ on, a spend of ``(ε/m − ε₀, δ/m)`` for what
its regime then measures (:class:`~.sets.SetsPlan`: one ledger line per set). Fit charges that
part as one measurement of exactly ``(ε/m − ε₀, δ/m)`` whose parts (group counts, marginals,
their noise and costs) the statement lists (:class:`~.sets.Composed`, which refuses parts that
compose to more). The group ε y, the marginal ε and the Gaussian ρ are those of the regime at
``ε/m``, with ρ converted at ``δ/m``; the thresholds ε₀…ε₃ do not scale with m, so a set at
``ε/m`` may fall in a cheaper regime than one set at ε (e.g. one-way instead of two-way).

*Proof that the release is (ε, δ)-DP and each set (ε/m, δ/m)-DP.* Set k's noisy total is
ε₀-DP. Its regime is a function of Ñ_k and public inputs; given it, the group counts are y-DP,
the one-way marginals add up to ``ε/m − ε₀ − y`` (pure), and the two-way marginals are ρ'-zCDP
with ``ρ' ≤ approx_to_zcdp(ε/m − ε₀ − y, δ/m)``, hence ``(ε/m − ε₀ − y, δ/m)``-DP (Canonne,
Kamath & Steinke 2020, §2.3): by basic composition, the regime's part is ``(ε/m − ε₀, δ/m)``-DP
in every regime (the public one uses no δ, and a guarantee with more δ still holds). Basic
composition holds for mechanisms chosen adaptively from earlier outputs (Dwork & Roth 2014,
Thm 3.16, whose proof applies to adaptive choices; Dwork, Rothblum & Vadhan 2010), so set k is
``(ε₀ + ε/m − ε₀, δ/m) = (ε/m, δ/m)``-DP, and, the m sets composing the same way, the release
is ``(ε, δ)``-DP. Every set is charged the same ``(ε/m, δ/m)``, whatever its regime, so the
statement's total is (ε, δ) (up to float rounding) and its per-set line, the total over m, is
each set's own guarantee. (With one set the parts are charged one by one, as above, and the
zCDP parts converted once at δ, which can state less than ε.)

**n is never read.** Emptiness and size come from the noisy total and noisy group counts only;
every group gets at least ``least`` records. When the noisy marginals of regime b or c say nothing
(their consistent total is ≤ 0, as on an empty file at a very large ε), the public marginals and
the public records stand in for them, as in regime 1.

**A local search after GUM** (``search``, not in the challenge code; :mod:`.refine`). The pool GUM
makes from the noisy marginals (regimes b and c) then goes through the search privsyn runs after
GUM: single-value moves wherever they lower the pool's L1 distance to GUM's own targets, 30 sweeps
by default. Post-processing of the noisy marginals. On Adult's public/private split (32,384
private rows; seeds 0–1, the evaluation data) it took the 2-/3-way TVD from 0.0665 / 0.1292 to
0.0587 / 0.1119 at ε = 1 and from 0.0220 / 0.0637 to 0.0127 / 0.0471 at ε = 10, doubling the time
(15 → 29 s). ``search=0`` leaves GUM's pool as it is.

**A smaller sample** (``rows``, not in the challenge code). GUM's time grows with the records it
makes (10⁶ records of Adult's 14 columns: about 10 minutes on two cores), so a census-size file
can be released as a sample: the noisy group counts are scaled to add up to ``rows`` before
``least`` and ``multiple`` apply, each group keeping its noisy share. Scaling is post-processing
of the noisy counts by a public number, so the guarantee is unchanged.

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
from ...privacy import ZCDP, ApproxDP, PureDP, Spend
from ...privacy.conversions import approx_to_zcdp
from ...privacy.measurement import DiscreteGaussian, DiscreteLaplace, Measurement, Query, Table, Total
from ...privacy.relation import ADD_REMOVE, Relation, individual
from ...privacy.rng import Randomness
from ...privacy.session import Session
from ..base import MAX_ROWS, Model, Option, Plan, Synthesizer, theta_option, whole
from .consistency import make_consistent
from .gum import MAX_ITERATIONS, initial_records, update_records
from .marginal import Marginal, Zeros, exact_counts, held_at_zero, rule_zeros
from .refine import SWEEPS, progress_of, refine_records, search_option
from .sets import SetsModel, SetsPlan, measure_parts

logger = logging.getLogger(__name__)

#: Weight of a public marginal in consistency, relative to the noisy one-way marginals (the code's 0.01).
PUBLIC_WEIGHT = 0.01
#: The largest pool: 100 times the default. The pool is drawn by GUM, held in memory as codes, and
#: every group's records are swapped against it; past a million candidates the swaps gain nothing
#: and each group's selection takes minutes.
MAX_POOL = 1_000_000


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


#: τ in regime c's ``x = ε − ε₀ − ε₁ − τ``: ``tau1`` as the submitted code (``sample_parallel.py``
#: @7d7bf0d; the default), ``tau2`` as the write-up (S-002, "Choosing Among the Three Methods").
TAU_RULES = ("tau1", "tau2")
#: (ε, δ) → ρ for the two-way marginals: ``cks`` (Canonne, Kamath & Steinke 2020, §2.3; the default)
#: or ``bun-steinke`` (Bun & Steinke 2016, Prop. 1.3: the write-up's footnote 1).
CONVERSIONS = ("cks", "bun-steinke")


def taus(theta: int, noisy_total: float) -> tuple[float, float]:
    """``(τ₁, τ₂) = (1500θ/Ñ, 6τ₁)`` (S-002; METHODS.md §4.3), with Ñ taken as at least 1.

    >>> [round(t, 6) for t in taus(7, 1_000_000)]
    [0.0105, 0.063]
    """
    tau1 = 1500 * theta / max(noisy_total, 1.0)
    return tau1, 6 * tau1


def regime(epsilon: float, theta: int, noisy_total: float | None, tau: str = "tau1") -> Regime:
    """The branch of METHODS.md §4.3 for ε, θ and the noisy total Ñ (None in branch 1).

    ``tau`` is the τ of regime c's ``x = ε − ε₀ − ε₁ − τ`` (:data:`TAU_RULES`): ``"tau1"``, the
    submitted code's (regime b's x, the default), or ``"tau2"``, the write-up's. With θ = 7 and
    Ñ = 10⁶ (METHODS.md's example: τ₁ = 0.0105, τ₂ = 0.063), ε = 0.1, 0.2 and 0.25 fall in the
    three regimes, and at ε = 0.25 the group counts get 0.18725 (code) or 0.161 (write-up):

    >>> regime(0.1, 7, None).name, regime(0.2, 7, 1_000_000).name, regime(0.25, 7, 1_000_000).name
    ('public', 'one-way', 'two-way')
    >>> round(regime(0.25, 7, 1e6).group_epsilon, 6), round(regime(0.25, 7, 1e6, "tau2").group_epsilon, 6)
    (0.18725, 0.161)
    """
    if tau not in TAU_RULES:
        raise ValueError(f"tau must be one of {TAU_RULES}, got {tau!r}")
    e0, e1, e2, e3 = thresholds(theta)
    if epsilon < e2:
        return Regime("public", 0.0, epsilon, 0.0)
    if noisy_total is None:
        raise ValueError("the noisy total is needed when ε >= ε₂")
    tau1, tau2 = taus(theta, noisy_total)
    if epsilon < e0 + e1 + tau1:  # a
        return Regime("public", e0, epsilon - e0, 0.0)
    if epsilon < e0 + e1 + tau2:  # b: x = ε − ε₀ − ε₁ − τ₁ in the write-up and the code
        name, x = "one-way", epsilon - e0 - e1 - tau1
    else:  # c: τ₁ in the submitted code, τ₂ in the write-up
        name, x = "two-way", epsilon - e0 - e1 - (tau1 if tau == "tau1" else tau2)
    y = min(e3, e1 + x / 2)
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


def swap_select(
    pool: np.ndarray, targets: list[Marginal], n: int, rounds: int, rng: np.random.Generator, tolerance: float = 1e-3
) -> np.ndarray:
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
    cells = np.stack(
        [
            np.ravel_multi_index(tuple(pool[:, a] for a in t.attributes), t.counts.shape) + off
            for t, off in zip(targets, offsets[:-1])
        ]
    )  # (marginals, pool)
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


def _choice(option: str, values: tuple[str, ...]):
    def parse(value: Any) -> str:
        v = str(value).strip().lower()
        if v not in values:
            raise DipsyError(f"option {option}={value!r} is unknown", f"use one of {', '.join(values)}")
        return v

    return parse


def public_records(public: Engine, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
    """The public data set's distinct records (codes, one column per domain column, in
    lexicographic order — the C order of the full table's cells) and how often each occurs.

    Read record by record (:meth:`~dipsy.engine.Engine.codes`), not as a cross-tabulation of
    every column, whose cells (10³¹ for the NIST 2020 encoding's 24 columns) cannot be indexed.
    Public data: read freely."""
    names = domain.names
    by_name = public.codes(names)  # bins and missing states of numeric columns included
    codes = [by_name[n] for n in names]
    if not codes or len(codes[0]) == 0:
        return np.zeros((0, len(names)), dtype=np.int64), np.zeros(0, dtype=np.int64)
    rows, counts = np.unique(np.stack(codes, axis=1), axis=0, return_counts=True)
    return rows.astype(np.int64), counts.astype(np.int64)


def public_engine(path: Path, domain: Domain) -> Engine:
    """The public data set against the domain (rows outside it dropped): public data, read freely."""
    public = engine_for(path, domain, on_invalid="drop")
    if public.num_rows() < 1:
        raise DipsyError("the public data set has no rows that match the domain", "check it against the domain")
    return public


@dataclass(frozen=True)
class Settings:
    """The run's public choices (options), kept by the model for post-processing."""

    least: int
    multiple: int | None
    pool: int
    iterations: int
    rows: int | None = None
    #: Sweeps of local search after GUM (:mod:`.refine`); 0: GUM's pool as it is.
    search: int = 0


class DPSyn(Synthesizer):
    """DPSyn, NIST 2020 sprint 2: public data, noisy group counts, noisy marginals by regime."""

    budget: ApproxDP  # Synthesizer.__init__ refuses a budget of another definition
    name = "dpsyn"
    summary = (
        "DPSyn (NIST 2020 challenge): public data, noisy group sizes, noisy 1- or 2-way marginals by ε regime, "
        "records swapped toward them per group; (ε, δ)-DP; m sets of (ε/m, δ/m), each its own run"
    )
    definition = "approximate-DP"
    relations = (ADD_REMOVE,)
    options = (
        Option(
            "public",
            _path,
            "a public data set of the same columns (CSV or Parquet): its statistics are free (required)",
            public_file=True,
        ),
        Option("groups", _names, "columns whose cells are synthesized one by one, e.g. PUMA (default: one group)"),
        theta_option(),
        Option("least", whole("least", 0, MAX_ROWS, 300), "smallest group size synthesized (default 300)"),
        Option(
            "multiple",
            whole("multiple", 1, MAX_ROWS, 100),
            "group sizes are rounded to this multiple (default 10 with public marginals only, else 100)",
        ),
        Option("pool", whole("pool", 1, MAX_POOL, 10000), "candidate records each group is chosen from (default 10000)"),
        Option("iterations", whole("iterations", 0, MAX_ITERATIONS, 60), "GUM update rounds for the pool (default 60)"),
        search_option(
            f"sweeps of local search after GUM, each one proposed move per value of the pool (default {SWEEPS}; "
            "0: GUM's pool as it is)",
        ),
        Option(
            "rows",
            whole("rows", 1, MAX_ROWS, 100000),
            "synthetic records in all, about (a public choice): each group gets its "
            "noisy share, then least and multiple apply (default: each group its noisy count)",
        ),
        Option(
            "tau",
            _choice("tau", TAU_RULES),
            "τ in the two-way regime's x = ε − ε₀ − ε₁ − τ: tau1 as the submitted challenge "
            "code (default) or tau2 as the write-up",
        ),
        Option(
            "conversion",
            _choice("conversion", CONVERSIONS),
            "(ε, δ) to ρ for the two-way marginals: cks (Canonne, Kamath & "
            "Steinke 2020, the larger ρ; default) or bun-steinke (Bun & Steinke 2016, Prop. 1.3, as the write-up)",
        ),
    )

    def relation_for(self, relation: Relation) -> Relation:
        return individual(self.settings.get("theta", 1))

    def group_query(self) -> Query:
        """The group counts: the table of the group columns, or the number of rows with no groups."""
        groups = self.settings.get("groups", ())
        return Table(tuple(groups)) if groups else Total()

    def share(self) -> tuple[float, float]:
        """Each set's ``(ε/m, δ/m)`` (basic composition over the sets; the module docstring's proof)."""
        return self.budget.epsilon / self.sets, self.budget.delta / self.sets

    def plan(self, n: int | None, domain: Domain) -> Plan:
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
        public_engine(self.settings["public"], domain)  # refused before anything is charged or read
        theta, m = self.relation.theta, self.sets
        epsilon, delta = self.share()  # one set's; the whole budget when m = 1
        e0, _, e2, _ = thresholds(theta)
        adaptive_sets: tuple[Spend, ...] = ()
        if epsilon < e2:  # regime 1: every ε on the group counts, nothing adaptive
            noise = DiscreteLaplace.for_budget(PureDP(epsilon), theta)
            measurements = tuple(
                Measurement(
                    self.set_label(f"group counts, discrete Laplace scale θ/ε = {float(noise.scale):g}", k),
                    self.group_query(),
                    noise,
                    self.relation,
                    self.set_index(k),
                )
                for k in range(m)
            )
            adaptive = None
        else:
            noise = DiscreteLaplace.for_budget(PureDP(e0), theta)
            measurements = tuple(
                Measurement(
                    self.set_label(f"noisy total, discrete Laplace scale θ/ε₀ = {float(noise.scale):g}", k),
                    Total(),
                    noise,
                    self.relation,
                    self.set_index(k),
                )
                for k in range(m)
            )
            adaptive = ApproxDP(self.budget.epsilon - m * e0, self.budget.delta) if m > 1 else ApproxDP(epsilon - e0, delta)
            if m > 1:
                adaptive_sets = tuple(
                    Spend(label, ApproxDP(epsilon - e0, delta))
                    for label in self.per_set_labels("group counts and marginals, split by the regime its noisy total picks")
                )
        mechanism = (
            "DPSyn (Li, Li & Wang, NIST 2020 sprint 2): discrete Laplace group counts and one-way marginals, or "
            "discrete Gaussian two-way marginals under zCDP, by the ε regime; the public data set and all "
            "synthesis from the noisy values are free"
        )
        public = (
            *self.public(None),
            f"θ = {theta}, the most rows one individual owns",
            f"the public data set {self.settings['public'].name}",
        )
        composition = (
            "basic composition of the group counts"
            if adaptive is None
            else "basic composition of the noisy total, the group counts and the marginals (adaptive: a privacy filter "
            "bounds what the regime measures by (ε − ε₀, δ)); the zCDP spends are added as ρ and converted once"
        )
        params = {
            "theta": theta,
            "groups": list(groups),
            "public": self.settings["public"].name,
            "thresholds": dict(zip(("epsilon_0", "epsilon_1", "epsilon_2", "epsilon_3"), thresholds(theta))),
            "tau": self.settings.get("tau", "tau1"),
            "conversion": self.settings.get("conversion", "cks"),
            "search": self.settings.get("search", SWEEPS),
        }
        if m > 1:
            mechanism += f"; {m} independent sets, each from its own complete run at (ε/{m}, δ/{m}) with its own regime"
            composition = f"basic composition over {m} sets, each its own complete run at (ε/{m}, δ/{m}): " + (
                "its group counts"
                if adaptive is None
                else f"its noisy total (ε₀), then what its regime measures charged as one measurement of exactly "
                f"(ε/{m} − ε₀, δ/{m}) (its zCDP parts converted at δ/{m}; a privacy filter bounds the sets' total)"
            )
            params |= {"epsilon_per_set": epsilon, "delta_per_set": delta}
        return SetsPlan(
            measurements,
            self.relation,
            public,
            mechanism,
            composition,
            params,
            adaptive=adaptive,
            adaptive_label=(
                f"{self.name}: group counts and marginals, split by the regime the noisy total picks"
                if m == 1
                else f"{self.name}: each set's group counts and marginals, split by the regime its noisy total picks"
            ),
            adaptive_sets=adaptive_sets,
        )

    def fit(self, session: Session, plan: Plan) -> DPSynModel | SetsModel:
        """Run each set's measurements in turn; one set gives a :class:`DPSynModel`, m sets a
        :class:`~.sets.SetsModel` of m of them, each from its own measurements only."""
        domain = session.domain
        names = domain.names
        group_idx = tuple(names.index(g) for g in self.settings.get("groups", ()))
        rest = tuple(i for i in range(len(names)) if i not in group_idx)
        public = public_engine(self.settings["public"], domain)  # public data: free, not through the session
        pairs = [(a, b) for i, a in enumerate(rest) for b in rest[i + 1 :]]
        # the public data's statistics (free): its marginals, and its records for the pool
        public_marginals = tuple(
            Marginal(p, exact_counts(public, p).astype(float)) for p in (pairs if pairs else [(a,) for a in rest])
        )
        shared = (public_marginals, bool(pairs), *public_records(public, domain))
        models = tuple(
            self._fit_set(session, planned, plan.adaptive is not None, k, group_idx, rest, pairs, shared)
            for k, planned in enumerate(plan.measurements)
        )  # one planned measurement per set
        return models[0] if self.sets == 1 else SetsModel(models)

    def _fit_set(
        self,
        session: Session,
        planned: Measurement,
        adaptive: bool,
        k: int,
        group_idx: tuple[int, ...],
        rest: tuple[int, ...],
        pairs: list[tuple[int, int]],
        shared: tuple,
    ) -> DPSynModel:
        """Set ``k`` (0-based) from its planned measurement: its group counts in regime 1 (not
        ``adaptive``), else its noisy total, from which its regime picks what to measure next."""
        names = session.domain.names
        sizes = session.domain.shape(names)
        theta = self.relation.theta
        epsilon, delta = self.share()
        e0 = thresholds(theta)[0]

        # the regime: from ε alone, or from the noisy total (ε₀); then the noisy group counts (sensitivity θ)
        parts: list[Measurement] = []
        if not adaptive:
            r = regime(epsilon, theta, None)
            noisy_groups = session.measure(planned)
        else:
            noisy_total = float(session.measure(planned)[0])
            r = regime(epsilon, theta, noisy_total, tau=self.settings.get("tau", "tau1"))
            noise = DiscreteLaplace.for_budget(PureDP(r.group_epsilon), theta)
            parts.append(
                Measurement(
                    self.set_label(f"group counts ({r.name} regime), discrete Laplace scale θ/y = {float(noise.scale):g}", k),
                    self.group_query(),
                    noise,
                    self.relation,
                )
            )
        logger.info("dpsyn regime %s: group counts ε = %.4g, marginals ε = %.4g", r.name, r.group_epsilon, r.marginal_epsilon)

        # the regime's noisy marginals
        weights: list[tuple[tuple[int, ...], float]] = []  # (attributes, consistency weight) of each marginal part
        if r.name == "one-way":
            for a in rest:
                noise = DiscreteLaplace.for_budget(PureDP(r.marginal_epsilon / len(rest)), theta)
                parts.append(
                    Measurement(
                        self.set_label(f"one-way marginal {names[a]}, discrete Laplace scale {float(noise.scale):.6g}", k),
                        Table((names[a],)),
                        noise,
                        self.relation,
                    )
                )
                # weight 1/(2 var) with var ≈ 2 b²: an inverse-variance weight for consistency
                weights.append(((a,), 1 / (4 * float(noise.scale) ** 2)))
        elif r.name == "two-way":
            measured = pairs if pairs else [(a,) for a in rest]  # one column besides the groups: its one-way marginal
            rho = approx_to_zcdp(r.marginal_epsilon, delta, self.settings.get("conversion", "cks"))
            for p in measured:
                gaussian = DiscreteGaussian.for_budget(ZCDP(rho / len(measured)), theta)
                cols = tuple(names[a] for a in p)
                parts.append(
                    Measurement(
                        self.set_label(f"marginal {' × '.join(cols)}, discrete Gaussian σ² = {gaussian.sigma2}", k),
                        Table(cols),
                        gaussian,
                        self.relation,
                    )
                )
                weights.append((p, gaussian.cost.rho))
        # with m sets, what the regime measures is one measurement charged exactly the set's share (see .sets: why)
        charge = (
            None
            if self.sets == 1 or not parts
            else (self.set_label(f"group counts and marginals of the {r.name} regime", k), ApproxDP(epsilon - e0, delta))
        )
        outputs = measure_parts(session, parts, charge, self.set_index(k))
        if parts:
            noisy_groups, outputs = outputs[0], outputs[1:]
        noisy = tuple(
            Marginal(p, np.asarray(out, dtype=float).reshape([sizes[a] for a in p]), w) for (p, w), out in zip(weights, outputs)
        )

        public_marginals, has_pairs, public_rows, public_counts = shared
        settings = Settings(
            self.settings.get("least", 300),
            self.settings.get("multiple"),
            max(self.settings.get("pool", 10000), 1),
            self.settings.get("iterations", 60),
            self.settings.get("rows"),
            self.settings.get("search", SWEEPS),
        )
        return DPSynModel(
            names,
            tuple(sizes),
            group_idx,
            rest,
            r,
            np.asarray(noisy_groups, dtype=np.int64).ravel(),
            noisy,
            public_marginals,
            has_pairs,
            public_rows,
            public_counts,
            settings,
            rule_zeros(session.domain.rule_cells, names),
        )


@dataclass(frozen=True, eq=False)
class DPSynModel(Model):
    """What the measurements released (``noisy_groups``, the regime's ``noisy`` marginals), the
    ``regime`` (public: chosen from the noisy total), the public data's marginals and its records
    (its distinct records as codes, and their counts), and public options. :meth:`sample` is
    post-processing."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    group_idx: tuple[int, ...]
    rest: tuple[int, ...]
    regime: Regime
    noisy_groups: np.ndarray
    noisy: tuple[Marginal, ...]
    public_marginals: tuple[Marginal, ...]
    has_pairs: bool
    public_rows: np.ndarray
    public_counts: np.ndarray
    settings: Settings
    #: The edit rules' forbidden cells, held at 0 in the marginals GUM and the swaps aim at.
    zeros: Zeros = ()

    sets = 1

    def exchangeable(self) -> tuple[str, ...] | None:
        """The group columns: the records are placed group by group, each group its noisy size, so a
        rejected row is replaced by an allowed record of its own group (:mod:`dipsy.methods.enforce`)."""
        return tuple(self.names[g] for g in self.group_idx)

    def group_sizes(self) -> np.ndarray:
        """The records each group gets: its *noisy* count raised to ``least`` and rounded (§4.4),
        in the C order of the group columns' cells (one value with no groups). Never a true count.

        With the ``rows`` option the noisy counts are first scaled to add up to ``rows`` (their
        negative parts taken as 0): a sample of the size asked for, each group its noisy share;
        a function of the noisy counts and a public choice, so post-processing."""
        s = self.settings
        noisy = self.noisy_groups.astype(float)
        if s.rows is not None:
            noisy = noisy * (s.rows / max(float(np.maximum(noisy, 0).sum()), 1.0))
        return post_process_groups(noisy, s.least, s.multiple or (10 if self.regime.name == "public" else 100))

    def choices(self) -> dict:
        """The regime (a function of the noisy total and public inputs) and the group sizes (of
        the noisy group counts): public, and what the synthetic set shows anyway."""
        r = self.regime
        return {
            "regime": {
                "name": r.name,
                "total_epsilon": r.total_epsilon,
                "group_epsilon": r.group_epsilon,
                "marginal_epsilon": r.marginal_epsilon,
            },
            "group_sizes": [int(x) for x in self.group_sizes()],
        }

    def sample(self, k: int, rand: Randomness) -> dict[str, np.ndarray]:
        r, s, names, sizes = self.regime, self.settings, self.names, list(self.sizes)
        group_idx = self.group_idx
        group_sizes = self.group_sizes()

        self.report(f"dpsyn: {r.name} regime, the marginals")
        targets, pool_targets = self._targets()
        from_public = targets is None
        if (
            targets is None or pool_targets is None
        ):  # (both or neither) public regime, or noisy marginals that say nothing: the public ones stand in
            targets = pool_targets = list(self.public_marginals)
        # the edit rules' forbidden cells held at 0 in the targets (public rules: post-processing)
        targets, pool_targets = held_at_zero(targets, self.zeros), held_at_zero(pool_targets, self.zeros)
        rng = rand.numpy
        pool = None
        by_size: dict[int, np.ndarray] = {}  # one set per distinct size, reused for every group of that size
        distinct = sorted(set(group_sizes.tolist()))
        for j, size in enumerate(distinct):
            self.report(f"dpsyn: records for groups of {size}", j, len(distinct))
            if size >= s.pool:  # GUM works well at this size: synthesize it directly (§4.4's remark)
                by_size[size] = self._pool(from_public, pool_targets, size, rng)
                continue
            if pool is None:
                pool = self._pool(from_public, pool_targets, s.pool, rng)
            by_size[size] = swap_select(pool, targets, size, max(size // 3, 1), rng)
        parts = []
        group_cells = (
            np.array(np.unravel_index(np.arange(len(group_sizes)), [sizes[g] for g in group_idx])).T if group_idx else [()]
        )
        for cell, size in zip(group_cells, group_sizes.tolist()):
            block = by_size[size].copy()
            for g, code in zip(group_idx, cell):
                block[:, g] = code
            parts.append(block)
        records = np.concatenate(parts) if parts else np.zeros((0, len(names)), dtype=np.int64)
        return {name: records[:, i].astype(np.int64) for i, name in enumerate(names)}

    def _targets(self) -> tuple[list[Marginal] | None, list[Marginal] | None]:
        """The swap targets and the pool's GUM targets from the noisy marginals (consistent,
        non-negative); ``(None, None)`` in the public regime, or when their consistent total is ≤ 0."""
        r = self.regime
        if r.name == "public":
            return None, None
        if r.name == "one-way":
            one = list(self.noisy)
            total = np.mean([m.total for m in one])
            weight = one[0].rho
            public = (
                [
                    Marginal(m.attributes, m.counts * total / max(m.total, 1e-12), PUBLIC_WEIGHT * weight)
                    for m in self.public_marginals
                ]
                if self.has_pairs and total > 0
                else []
            )
            consistent = make_consistent(one + public)
            if not consistent[0].total > 0:
                return None, None
            return consistent[: len(one)], consistent
        consistent = make_consistent(list(self.noisy))
        if not consistent[0].total > 0:
            return None, None
        return consistent, consistent

    def _pool(self, from_public: bool, targets: list[Marginal], size: int, rng: np.random.Generator) -> np.ndarray:
        """Candidate records: a sample of the public data (public targets) or GUM from the targets."""
        if from_public:
            public = np.repeat(self.public_rows, self.public_counts, axis=0)
            return (
                public[rng.integers(0, len(public), size)] if size > len(public) else public[rng.permutation(len(public))[:size]]
            )
        sizes, rest = list(self.sizes), self.rest
        one = [m for m in targets if len(m.attributes) == 1]
        if not one:  # two-way targets: their one-way projections, consistent already
            one = [next(m for m in targets if a in m.attributes).project((a,)) for a in rest]
        full = [Marginal((a,), np.ones(sizes[a])) for a in range(len(sizes)) if a not in rest]
        records = initial_records(sorted(one + full, key=lambda m: m.attributes), sizes, size, rng)
        gum_targets = [m for m in targets if len(m.attributes) > 1] or one
        records, _ = update_records(records, gum_targets, sizes, self.settings.iterations, rng=rng)
        if self.settings.search:
            sweeps = self.settings.search
            records = refine_records(
                records,
                gum_targets,
                sizes,
                sweeps,
                rng,
                progress=progress_of(self.report, "dpsyn", sweeps),
            )
        return records
