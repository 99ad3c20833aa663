r"""The forecast's parts for MST, AIM, DPSyn and the random decision trees (:mod:`dipsy.forecast`).

Each part sets the noise per measured cell, fixed by the plan, against the domain's cells and n.
The measure is the noisy-table bound of :mod:`dipsy.forecast`. A table of c cells with noise of
``E⁺ = E[max(e, 0)]`` per empty cell gains at most c·E⁺ spurious records. Their share is
``s(c, E⁺) = c·E⁺ / (n + c·E⁺)``, which grows with c and with the noise. When the run chooses what
it measures, a verdict is given only when it holds for every table the run could measure. A range
of shares ``[s_low, s_high]`` then gets the verdict of both ends when they agree. When ``s_low`` is
already "weak" the verdict is "weak", stated as *at least* weak. Otherwise the part gets no verdict
and gives the range. n is the row count the plan holds (public under its relation) or the one the
steward declares (``rows``). Without either, every part gives its break-even n instead of a verdict.

**MST** (:mod:`~dipsy.methods.marginals.mst`). The plan fixes σ₂² of every pair it will measure:
``ρ/(3(d − 1))`` per pair for d ≥ 3 (ρ/2 for the only pair when d = 2), per set. Every run measures
exactly d − 1 pairs, a spanning tree. Every spanning tree has an edge at the widest column, and
that edge has at least ``s_min · s_max`` cells (the widest column with the narrowest). The star
around the narrowest column reaches that bound. So the worst pair of any tree has between
``s_min · s_max`` and the domain's largest pair of cells, and any pair may be chosen. The figures
are for the domain's values. MST first merges the values whose noisy one-way count is below 3σ₁
into one. On sparse columns it therefore measures fewer cells: it trades this noise for coarser
values, spread back in proportion to their noisy one-way counts (noise of sd σ₁ ≥ σ₂ each).

**AIM** (:mod:`~dipsy.methods.marginals.aim`). The d one-way marginals are fixed, at σ₀. A round
at level j (after j annealings) has the nominal budget ``ρ_j = 4^j ρ/T`` and measures its marginal
with 0.9 of it. A round is the last when what remains, R, is below 2ρ_j, and then it measures with
0.9R. The level-j rounds can only be reached after one round at each lower level. So at level j,
R ≤ A − S_j, where A is the adaptive remainder of ρ and S_j the charged cost of one round at each
lower level. A round ends at level j when ``A − S_j < 2ρ_j``. Every measurement's budget therefore
lies between ``0.9 · min(A, ρ/T)`` and ``0.9 · max_j min(A − S_j, 2ρ_j)``. For the lower end: a
round that is not the last leaves R ≥ 2ρ_j − ρ_j ≥ ρ/T. The candidates are the downward closure
of the k-way workload, which holds every single column. Each candidate is at most the model-size
limit, ``max_size_mb · 2²⁰ / 8`` cells, except the one-ways, which are always free. A run may
measure nothing but one-way marginals. Hence ``s_low`` is the narrowest column at the least noise.
``s_high`` is the largest candidate at the most noise.

**DPSyn** (:mod:`~dipsy.methods.marginals.dpsyn`). Below ε₂ = θ/35 the plan is fixed: the group
counts, judged as a noisy table. Every other column follows the public data set, which the
forecast cannot judge against the data. From ε₂ on, the noisy total Ñ (discrete Laplace of scale
θ/ε₀ = 1400) picks the regime. With ``D = ε − ε₀ − ε₁``, the regime is *public* when
``max(Ñ, 1) < 1500θ/D``, *one-way* below ``9000θ/D`` and *two-way* from there. Ñ may take any
integer, so every regime whose interval holds one is possible. The group ε is
``y = min(ε₃, ε₁ + x/2)``, with x from 0 up to ``5D/6`` in the one-way regime, and in the two-way
regime from ``5D/6`` (``tau1``) or 0 (``tau2``) up to D. In the public regime the group counts get
``ε − ε₀``, the most they can. In the one-way regime every other column's one-way gets
``(ε − ε₀ − y)/k`` (discrete Laplace). In the two-way regime every pair of them shares
``ρ(ε − ε₀ − y, δ)`` (discrete Gaussian). Every table of a regime is measured, so its worst table is
known and only its noise ranges. The public regime measures nothing of the other columns. While it
is possible, no run is certainly useful, and it is weak or noise only when the group counts are
weak or noise even at ``ε − ε₀``. With n declared, the probability of each regime is exact, from
the discrete Laplace's distribution function.

**Random decision trees** (:mod:`~dipsy.methods.rdt`). The plan grows every tree from public
inputs: the structure file or the seed. So each tree's L leaves are known, and with them the
L × K (leaf, label) cells that get discrete Laplace noise of scale Δ/ε_tree. A record's label is
drawn from its leaf's noisy counts. Weighted by the records, the noise share over a tree's leaves
is ``Σ_ℓ (n_ℓ/n) · a/(n_ℓ + a)``, with a = K·E⁺. This is at most ``L·a / (n + L·a)``: the function
``x ↦ x·a/(x + a)`` is concave, so the sum is largest when the leaves share n equally. Averaging
E trees (or drawing one at random) averages their shares. A sensitive column's bound is therefore
the mean of its trees' bounds, before the leaves below ``leaf_min`` fall back to their ancestors,
which only pools counts. Nothing is chosen during the run, so the verdict is that of a noisy table.
With ``targets=PATH`` the weights are the confidential records', not the targets'.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from .domain import Domain
from .forecast_noise import SHARE_NOISE, SHARE_WEAK, discrete_laplace_positive, noise_ratio, positive_noise
from .privacy import ZCDP
from .privacy.budget import of_kind
from .privacy.measurement import DiscreteGaussian, DiscreteLaplace

#: Above this many subsets AIM's largest candidate is bounded by the k widest columns' product
#: instead of searched (a bound on the largest: the verdict only gets more careful).
MAX_SUBSETS = 1_000_000


def marginal_parts(plan: Any, domain: Domain, n: int | None) -> list[dict] | None:
    """The parts for an MST, AIM or DPSyn plan, told apart by their public parameters; None for
    any other plan.

    Parameters
    ----------
    plan
        The method's :class:`~dipsy.methods.base.Plan`.
    domain
        The released columns' public domain.
    n
        The row count the plan holds or the steward declares; None when neither.

    Returns
    -------
    list of dict or None
        Parts as :func:`dipsy.forecast.forecast` lists them (``what``, ``verdict``, ``share``,
        ``figures``, ``text``, ``advice``).
    """
    p = plan.parameters
    if "sigma2_two_way" in p and plan.adaptive is not None:
        return [_mst(plan, domain, n)]
    if {"rounds", "workload", "max_size_mb"} <= set(p) and plan.adaptive is not None:
        return [_aim(plan, domain, n)]
    if {"thresholds", "tau", "conversion", "groups"} <= set(p):
        return _dpsyn(plan, domain, n)
    return None


# -- shared arithmetic ------------------------------------------------------------------------------


def grade(share: float) -> str:
    """The verdict of one share of noise, against :data:`~dipsy.forecast.SHARE_NOISE` and
    :data:`~dipsy.forecast.SHARE_WEAK`.

    >>> grade(0.95), grade(0.3), grade(0.29)
    ('noise', 'weak', 'useful')
    """
    return "noise" if share >= SHARE_NOISE else "weak" if share >= SHARE_WEAK else "useful"


def share_of(cells: float, positive: float, n: int) -> float:
    """The share of spurious records a table of ``cells`` cells may hold, ``c·E⁺ / (n + c·E⁺)``.

    >>> share_of(100, 1.0, 900)
    0.1
    """
    spurious = cells * positive
    return spurious / (n + spurious)


def bounded(low: float | None, high: float | None) -> tuple[str, str]:
    """The verdict that holds for every run whose worst table's share lies in ``[low, high]``
    (None: that end unbounded), and how it holds: ``"certain"``, ``"at least"`` or ``"range"``.

    >>> bounded(0.95, None), bounded(0.4, 0.95), bounded(0.1, 0.95), bounded(0.1, 0.2), bounded(0.1, None)
    (('noise', 'certain'), ('weak', 'at least'), ('unknown', 'range'), ('useful', 'certain'), ('unknown', 'range'))
    """
    lo = "useful" if low is None else grade(low)
    hi = None if high is None else grade(high)
    if lo == hi or lo == "noise":  # nothing is worse than noise
        return lo, "certain"
    if lo != "useful":
        return lo, "at least"
    return "unknown", "range"


def _verdict_text(verdict: str, how: str, subject: str, reason: str) -> str:
    """The closing clause: ``subject`` (e.g. "whichever tree the run chooses, its worst pair is")
    and the verdict, or why there is none."""
    if how == "certain":
        return f"; {subject} {verdict}"
    if how == "at least":
        return f"; {subject} at least {verdict}"
    return f"; no verdict: {reason}"


def _span(low: float, high: float) -> str:
    """'a : b to c : d' noise, said once when both ends round alike."""
    a, b = noise_ratio(low), noise_ratio(high)
    return a if a == b else f"{a} to {b}"


def _part(what: str, verdict: str, figures: dict, text: str, advice: Sequence[str]) -> dict:
    return {"what": what, "verdict": verdict, "share": None, "figures": figures, "text": text, "advice": list(advice)}


def _sets(plan: Any) -> int:
    return len(getattr(plan, "adaptive_sets", ()) or ()) or 1


# -- MST --------------------------------------------------------------------------------------------


def _mst(plan: Any, domain: Domain, n: int | None) -> dict:
    from .methods.marginals.mst import COMPRESS_SDS

    p = plan.parameters
    theta = Fraction(p["theta"])
    two = DiscreteGaussian(Fraction(p["sigma2_two_way"]), theta)
    one = DiscreteGaussian(Fraction(p["sigma2_one_way"]), theta)
    names = domain.names
    sizes = domain.shape(names)
    d, m = len(sizes), _sets(plan)
    order = sorted(range(d), key=lambda i: (sizes[i], names[i]))
    narrow, wide = order[0], order[-1]
    pairs = sorted(a * b for i, a in enumerate(sizes) for b in sizes[i + 1 :])
    least_worst, largest = sizes[narrow] * sizes[wide], pairs[-1]
    cells = {"smallest": pairs[0], "median": pairs[len(pairs) // 2], "largest": largest, "least_worst": least_worst}
    positive, sd, rho_pair = positive_noise(two), two.sd, float(two.cost.rho)
    share = (f"ρ/(3·{m}(d − 1))" if d >= 3 else f"ρ/(2·{m})") if m > 1 else ("ρ/(3(d − 1))" if d >= 3 else "ρ/2")
    chosen = d - 1
    if p.get("analysis_share"):  # declared pairs are forced into the tree first (each forecast as its own measurement)
        chosen = d - 1 - len(p.get("declared_pairs", [])) + len(p.get("declared_left_out", []))
        share = f"(1 − {float(p['analysis_share']):g})ρ/(3{'·' + str(m) if m > 1 else ''}·{chosen})"
    figures: dict[str, Any] = {
        "pairs_measured": chosen,
        "rho_per_pair": rho_pair,
        "noise_sd_per_cell": sd,
        "spurious_per_empty_cell": positive,
        "pair_cells": cells,
        "spurious_at_most": {k: c * positive for k, c in cells.items()},
        "merge_below_records": COMPRESS_SDS * one.sd,
    }
    tree = (
        f"every spanning tree joins {names[wide]} ({sizes[wide]:,} values) to another column, so the worst pair it measures "
        f"has at least {least_worst:,} cells (with {names[narrow]}) and at most {largest:,} (the largest pair)"
        if d >= 3
        else f"the one pair has {largest:,} cells"
    )
    each = f"each of the {chosen} pairs MST chooses" if chosen > 1 else "the one pair MST chooses"
    text = (
        f"{each}{' in each set' if m > 1 else ''} gets {share} = {rho_pair:.4g} (noise sd {sd:.3g} per cell); {tree} of the "
        f"domain's values (MST first merges values below 3σ₁ ≈ {COMPRESS_SDS * one.sd:,.0f} noisy records, so sparse "
        "columns get fewer, coarser cells)"
    )
    verdict = "unknown"
    if n is None:
        figures["break_even_n"] = {"least_worst": least_worst * positive, "largest": largest * positive}
        text += (
            f"; with fewer than {least_worst * positive:,.0f} rows "
            + ("even the least of the trees' worst pairs" if d >= 3 else "the pair")
            + " would be more noise than data (declare --rows to judge)"
        )
    else:
        shares = {k: share_of(c, positive, n) for k, c in cells.items()}
        figures |= {"n": n, "noise_share": shares}
        verdict, how = bounded(shares["least_worst"], shares["largest"])
        text += f": up to {_span(shares['least_worst'], shares['largest'])} noise against n = {n:,}"
        text += _verdict_text(
            verdict,
            how,
            "whichever tree the run chooses, its worst pair is",
            "which pairs the tree takes is chosen from the data",
        )
    widest = ", ".join(names[i] for i in reversed(order[-2:]))
    advice = [
        f"{each} gets {share} (noise sd {sd:.3g} per cell): fewer columns, "
        f"coarser bins for the widest columns ({widest}), or a larger budget" + (", or fewer sets" if m > 1 else "")
    ]
    return _part(plan.adaptive_label, verdict, figures, text, advice)


# -- AIM --------------------------------------------------------------------------------------------


def aim_budgets(rho: float, rounds: int, adaptive: float, theta: int) -> tuple[float, float]:
    """The least and the most budget an AIM round can measure its marginal with (0.9 of the round's).

    Parameters
    ----------
    rho
        The release's ρ.
    rounds
        The nominal rounds T.
    adaptive
        A, what the plan declares for the rounds (ρ less the one-way marginals' costs).
    theta
        The most rows one individual owns (the noise's sensitivity).

    Returns
    -------
    tuple of float
        ``(0.9 · min(A, ρ/T), 0.9 · max_j min(A − S_j, 2ρ_j))``, with ``S_j`` the charged cost
        of one round at each level below j (see the module docstring). The first is reached by
        every run's first round (or its only one); the second by a run that anneals every round
        when its maximum is an ``A − S_j``, else it is a supremum within a factor 2 (a last round
        keeps less than ``2ρ_j``, and what runs can keep comes in steps of the rounds' costs).

    >>> low, high = aim_budgets(1.0, 64, 0.94375, 1)
    >>> round(low * 64 / 0.9, 9), round(high, 3)  # ρ/T at least; the last round at level 3 at most
    (1.0, 0.554)
    """
    from .methods.marginals.aim import MEASURE_SHARE
    from .privacy.selection import epsilon_for

    base = rho / rounds
    spent, level, top = 0.0, 0, 0.0
    while True:
        nominal = base * 4**level
        left = adaptive - spent  # the most that can remain at the first round of this level
        top = max(top, min(left, 2 * nominal))
        if left < 2 * nominal or level > 60:  # even that round is the last: no higher level is reached
            break
        measure = DiscreteGaussian.for_budget(ZCDP(MEASURE_SHARE * nominal), theta).cost.rho
        spent += measure + float(epsilon_for((1 - MEASURE_SHARE) * nominal) ** 2 / 8)
        level += 1
    return MEASURE_SHARE * min(adaptive, base), MEASURE_SHARE * top


def _largest_candidate(sizes: Sequence[int], k: int, limit: float) -> int:
    """The most cells of a marginal AIM may measure: a one-way (always free), or a subset of at most
    k columns within the model-size limit (bounded by the k widest columns when there are too
    many subsets to search)."""
    best = max(sizes)
    count = sum(math.comb(len(sizes), j) for j in range(2, k + 1))
    if count > MAX_SUBSETS:
        return max(best, int(min(limit, math.prod(sorted(sizes)[-k:]))))
    for j in range(2, k + 1):
        for r in itertools.combinations(sizes, j):
            cells = math.prod(r)
            if best < cells <= limit:
                best = cells
    return best


def _aim(plan: Any, domain: Domain, n: int | None) -> dict:
    from .methods.marginals.estimation import CELL_BYTES

    p = plan.parameters
    theta, k, T = int(p["theta"]), int(p["workload"]), int(p["rounds"])
    adaptive = of_kind(plan.adaptive, ZCDP).rho
    rho = adaptive + sum(of_kind(m.cost, ZCDP).rho for m in plan.measurements)
    rho *= 1.0 - float(p.get("analysis_share", 0.0))  # the rounds' ρ: declared analyses take their share first
    low, high = aim_budgets(rho, T, adaptive, theta)
    least, most = DiscreteGaussian.for_budget(ZCDP(high), theta), DiscreteGaussian.for_budget(ZCDP(low), theta)
    names = domain.names
    sizes = domain.shape(names)
    limit = float(p["max_size_mb"]) * 2**20 / CELL_BYTES
    narrowest = min(sizes)
    largest = _largest_candidate(sizes, k, limit)
    smallest_k = math.prod(sorted(sizes)[:k])
    plus, minus = positive_noise(least), positive_noise(most)
    figures: dict[str, Any] = {
        "rounds": T,
        "rho_per_round_at_first": rho / T,
        "least_measurement_rho": high,
        "most_measurement_rho": low,
        "noise_sd_per_cell": {"least": least.sd, "most": most.sd},
        "spurious_per_empty_cell": {"least": plus, "most": minus},
        "marginal_cells": {"narrowest_column": narrowest, f"smallest_{k}_way": smallest_k, "largest_candidate": largest},
    }
    text = (
        f"each round measures one marginal of the {k}-way workload or its subsets (down to single columns) with 0.9 of "
        f"its budget: ρ/T = {rho / T:.4g} at first (T = {T}), four times more after each annealing, the last round what "
        f"remains; so each has noise sd from {least.sd:.3g} to {most.sd:.3g} per cell, and {narrowest:,} to {largest:,} cells"
    )
    verdict = "unknown"
    if n is None:
        figures["break_even_n"] = {"narrowest_at_least_noise": narrowest * plus, "largest_at_most_noise": largest * minus}
        text += (
            f"; with fewer than {narrowest * plus:,.0f} rows even a one-way of {narrowest:,} cells at the least noise would "
            "be more noise than data (declare --rows to judge)"
        )
    else:
        lo, hi, k_way = share_of(narrowest, plus, n), share_of(largest, minus, n), share_of(smallest_k, plus, n)
        figures |= {"n": n, "noise_share": {"narrowest_at_least_noise": lo, f"smallest_{k}_way_at_least_noise": k_way}}
        figures["noise_share"]["largest_at_most_noise"] = hi
        verdict, how = bounded(lo, hi)
        text += (
            f": up to {_span(lo, hi)} noise against n = {n:,}"
            + (
                f" (any {k}-way it measures, {noise_ratio(k_way)} or more)"
                if k > 1 and grade(k_way) != grade(lo) and how == "range"
                else ""
            )
            + _verdict_text(
                verdict,
                how,
                "whatever the rounds choose, the worst marginal they measure is",
                "the rounds choose their marginals from the data (possibly one-ways only)",
            )
        )
    advice = [
        f"AIM's rounds measure with 0.9 of ρ/T = {rho / T:.3g} each until they anneal (T = {T} rounds): fewer rounds "
        "(rounds=), a lower-order workload (workload=2 or 1), fewer columns or coarser bins, or a larger budget"
    ]
    return _part(plan.adaptive_label, verdict, figures, text, advice)


# -- DPSyn ------------------------------------------------------------------------------------------


def below(n: int, scale: Fraction, t: float) -> float:
    """P(max(Ñ, 1) < t) for Ñ = n + Z, Z discrete Laplace of ``scale``: P(Z = z) ∝ p^|z|, p = e^(−1/scale).

    P(Z ≤ z) is ``p^(−z)/(1 + p)`` for z < 0 and ``1 − p^(z+1)/(1 + p)`` for z ≥ 0.

    At n = 0 and scale 1, P(Ñ ≤ 1) = 1 − e^(−2)/(1 + e^(−1)):

    >>> round(below(0, Fraction(1), 0.5), 6), round(below(0, Fraction(1), 1.5), 6), round(below(10**6, Fraction(1400), 10**9), 6)
    (0.0, 0.901062, 1.0)
    """
    if t <= 1:
        return 0.0
    p = math.exp(-1 / float(scale))
    z = math.ceil(t) - 1 - n  # Ñ ≤ ⌈t⌉ − 1
    return p ** (-z) / (1 + p) if z < 0 else 1 - p ** (z + 1) / (1 + p)


def _dpsyn(plan: Any, domain: Domain, n: int | None) -> list[dict]:
    p = plan.parameters
    theta = int(p["theta"])
    e0, e1, e2, e3 = (float(p["thresholds"][f"epsilon_{i}"]) for i in range(4))
    groups = tuple(p["groups"])
    rest = [c for c in domain.names if c not in groups]
    source = f"the public data set {p.get('public', '')}".rstrip()
    if plan.adaptive is None:  # below ε₂: the group counts only, judged as a noisy table
        eps = plan.measurements[0].cost.epsilon  # one set's group counts: all of its ε
        text = (
            f"at ε = {eps:.4g} per set, below ε₂ = θ/35 = {e2:.4g}, dpsyn measures the group counts only: "
            f"{', '.join(rest)} follow {source}, which the forecast cannot judge against the data"
        )
        advice = [f"from ε₂ = {e2:.4g} per set on, the noisy total can choose measured marginals"]
        return [_part("dpsyn: the columns besides the groups", "unknown", {"epsilon": eps, "epsilon_2": e2}, text, advice)]
    from .privacy.conversions import approx_to_zcdp

    spends = getattr(plan, "adaptive_sets", ()) or ()
    budget = spends[0].budget if spends else plan.adaptive
    eps, delta = budget.epsilon + e0, budget.delta
    D = eps - e0 - e1  # > 0: ε ≥ ε₂ > ε₀ + ε₁
    total_scale = plan.measurements[0].mechanism_as(DiscreteLaplace).scale  # θ/ε₀: the noisy total's
    sizes = dict(zip(domain.names, domain.shape(domain.names)))
    group_cells: int | None = math.prod(sizes[g] for g in groups) if groups else None
    k = len(rest)
    pairs = sorted((sizes[a] * sizes[b] for a, b in itertools.combinations(rest, 2)), reverse=True)
    worst_marginal = {"one-way": max(sizes[c] for c in rest), "two-way": pairs[0] if pairs else sizes[rest[0]]}
    at_a, at_c = 1500 * theta / D, 9000 * theta / D  # public below at_a, one-way below at_c, two-way from it
    possible = {"public": at_a > 1, "one-way": math.ceil(max(at_a, 1)) < at_c, "two-way": True}
    y_top = min(e3, e1 + D / 2)
    y = {
        "public": (eps - e0, eps - e0),
        "one-way": (e1, min(e3, e1 + 5 * D / 12)),
        "two-way": (min(e3, e1 + 5 * D / 12) if p["tau"] == "tau1" else e1, y_top),
    }

    def marginal(name: str, m_eps: float) -> DiscreteGaussian | DiscreteLaplace:
        if name == "one-way":
            return DiscreteLaplace.for_epsilon(m_eps / k, theta)
        rho = approx_to_zcdp(m_eps, delta, p["conversion"])
        return DiscreteGaussian.for_budget(ZCDP(rho / max(len(pairs), 1)), theta)

    regimes: dict[str, dict[str, Any]] = {}
    for name in ("public", "one-way", "two-way"):
        if not possible[name]:
            continue
        y_lo, y_hi = y[name]
        # (least, most) noise: the group counts get the most y or the least, the marginals what the group counts leave
        tables: list[tuple[int, Any, Any]] = []  # (cells, least noise, most noise) of the regime's worst tables
        if group_cells is not None:
            tables.append((group_cells, DiscreteLaplace.for_epsilon(y_hi, theta), DiscreteLaplace.for_epsilon(y_lo, theta)))
        regime: dict[str, Any] = {"group_epsilon": [y_lo, y_hi]}
        if name != "public":
            tables.append((worst_marginal[name], marginal(name, eps - e0 - y_lo), marginal(name, eps - e0 - y_hi)))
            regime |= {"marginal_epsilon": [eps - e0 - y_hi, eps - e0 - y_lo], "worst_marginal_cells": worst_marginal[name]}
        regime["noise_sd_per_cell"] = [[_sd(a), _sd(b)] for _, a, b in tables]
        if n is not None:
            low = max((share_of(c, positive_noise(a), n) for c, a, _ in tables), default=0.0)
            high = max((share_of(c, positive_noise(b), n) for c, _, b in tables), default=0.0)
            regime["noise_share"] = [low, None if name == "public" else high]  # public: the other columns are not judged
        regimes[name] = regime
    figures: dict[str, Any] = {
        "epsilon": eps,
        "delta": delta,
        "regime_noisy_total_below": {"public": at_a, "one-way": at_c},
        "regimes": regimes,
    }
    others = "the columns besides the groups" if groups else "every column"
    text = (
        f"at ε = {eps:.4g}{' per set' if _sets(plan) > 1 else ''} the noisy total (discrete Laplace, scale "
        f"{float(total_scale):,.4g}) picks "
        f"the regime: below {at_a:,.0f} the public one ({others} from {source}), below {at_c:,.0f} one-way marginals, from "
        f"there {f'the {len(pairs)} two-way marginals' if pairs else 'a one-way marginal at zCDP'} of {others}"
    )
    if group_cells is not None:
        least_y = min(r["group_epsilon"][0] for r in regimes.values())
        text += f"; the group counts ({group_cells:,} cells) get ε from {least_y:.4g} to {eps - e0:.4g}"
    verdict = "unknown"
    if n is None:
        text += "; declare --rows to judge the noise and the regime's odds"
    else:
        odds = {"public": below(n, total_scale, at_a), "two-way": 1 - below(n, total_scale, at_c)}
        odds["one-way"] = max(0.0, 1 - odds["public"] - odds["two-way"])
        figures |= {"n": n, "regime_probability": odds}
        ends = [r["noise_share"] for r in regimes.values()]
        verdict, how = bounded(min(e[0] for e in ends), None if any(e[1] is None for e in ends) else max(e[1] for e in ends))
        measured = {x: v for x, v in regimes.items() if x != "public"}
        text += (
            f"; with n = {n:,} the regimes' odds are public {odds['public']:.3g}, one-way {odds['one-way']:.3g}, "
            f"two-way {odds['two-way']:.3g}"
            + "".join(f"; {x}: up to {_span(*v['noise_share'])} noise in its worst table" for x, v in measured.items())
        )
        text += _verdict_text(
            verdict,
            how,
            "whichever regime the noisy total picks, its worst table is",
            "the noisy total picks the regime"
            + (f", and the public one measures none of {others}" if possible["public"] else ""),
        )
    advice = (
        []
        if group_cells is None
        else [
            f"the group counts ({group_cells:,} cells) get at most ε − ε₀ = {eps - e0:.4g}: fewer or coarser group cells, or "
            "a larger ε"
        ]
    )
    advice.append(
        f"the marginals of the {k} other columns share what the group counts leave: fewer columns, coarser bins, or a "
        f"larger ε (the two-way regime needs a noisy total of {at_c:,.0f} or more)"
    )
    return [_part(plan.adaptive_label, verdict, figures, text, advice)]


def _sd(mech: Any) -> float:
    if isinstance(mech, DiscreteGaussian):
        return mech.sd
    from .privacy.measurement import discrete_laplace_variance

    return math.sqrt(discrete_laplace_variance(mech.scale))


# -- random decision trees --------------------------------------------------------------------------


def is_leaf_count(m: Any) -> bool:
    """Whether ``m`` measures one random decision tree's (leaf, label) counts."""
    from .methods.rdt.synthesizer import LeafCounts

    return isinstance(m.query, LeafCounts) and isinstance(m.mechanism, DiscreteLaplace)


def leaf_parts(measurements: Sequence[Any], domain: Domain, n: int | None, parameters: Any) -> list[dict]:
    """One part per sensitive column: the mean over its trees of each tree's leaf-table bound,
    the worst set's when there are several.

    Parameters
    ----------
    measurements
        The plan's leaf-count measurements (:func:`is_leaf_count`), in plan order.
    domain
        The released columns' public domain (the labels' sizes).
    n
        The row count the plan holds or the steward declares; None when neither.
    parameters
        The plan's public parameters (``epsilon_per_tree``, ``targets``).

    Returns
    -------
    list of dict
        The parts, in the order of the sensitive columns.
    """
    by_label: dict[str, dict[int | None, list[tuple[int, Any]]]] = {}
    for m in measurements:
        by_label.setdefault(m.query.label, {}).setdefault(m.set_index, []).append((len(m.query.tree.leaves), m.mechanism))
    total = len(measurements)
    eps_tree = float(parameters.get("epsilon_per_tree", 0.0))
    out = []
    for label, sets in by_label.items():
        K = domain[label].size
        assert K is not None, "rdt refuses a sensitive column without categories or bins"
        mech = next(iter(sets.values()))[0][1]
        positive, sd = discrete_laplace_positive(mech.scale), _sd(mech)
        leaves = sorted(L for trees in sets.values() for L, _ in trees)
        per_tree = len(next(iter(sets.values())))
        middle = leaves[len(leaves) // 2]
        figures: dict[str, Any] = {
            "trees": len(leaves),
            "labels": K,
            "leaves_per_tree": {"least": leaves[0], "median": middle, "most": leaves[-1]},
            "noise_sd_per_cell": sd,
            "spurious_per_empty_cell": positive,
            "spurious_at_most_per_tree": {"least": leaves[0] * K * positive, "most": leaves[-1] * K * positive},
        }
        what = f"rdt: {label}'s leaf counts ({per_tree} tree(s){f' in each of {len(sets)} sets' if len(sets) > 1 else ''})"
        span = f"{leaves[0]:,}" if leaves[0] == leaves[-1] else f"{leaves[0]:,}–{leaves[-1]:,}"
        text = (
            f"{'each tree' if len(leaves) > 1 else 'the tree'}'s {span} leaves × {K} labels get discrete Laplace noise of sd "
            f"{sd:.3g} per cell (ε_tree = {eps_tree:.4g}" + (f", one of {total} trees)" if total > 1 else ", all of ε)")
        )
        if n is None:
            figures["break_even_n"] = middle * K * positive
            text += (
                f"; with fewer than {middle * K * positive:,.0f} rows the median tree's leaves would hold more noise than "
                "data (declare --rows to judge)"
            )
            verdict, share = "unknown", None
        else:
            share = max(statistics.fmean(share_of(L * K, positive, n) for L, _ in trees) for trees in sets.values())
            figures |= {"n": n, "noise_share_at_most": share, "records_per_leaf": n / middle}
            verdict = grade(share)
            text += (
                f"; a record's label is drawn from up to {noise_ratio(share)} noise on average (n = {n:,}, about "
                f"{n / middle:,.0f} records per leaf of the median tree"
                + (", weighted by the confidential records" if parameters.get("targets") == "targets file" else "")
                + ")"
            )
        advice = [
            (
                f"each of the {total} trees gets ε/{total} = {eps_tree:.3g} on its leaves × labels: fewer trees (trees=), "
                if total > 1
                else f"the one tree gets all of ε = {eps_tree:.3g}, the same noise on each of its leaves × labels: "
            )
            + "fewer leaves (a larger n_b, a smaller depth, collapse= or coarsen=), or a larger ε"
        ]
        part = _part(what, verdict, figures, text, advice)
        part["share"] = share
        out.append(part)
    return out


__all__ = ["aim_budgets", "below", "bounded", "grade", "is_leaf_count", "leaf_parts", "marginal_parts", "share_of"]
