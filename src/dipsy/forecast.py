"""The expected error of a release, forecast from its plan before anything is charged or measured.

A plan (:class:`~dipsy.methods.base.Plan`) fixes every measurement's query and noise from public
inputs: the domain, the budget, the number of sets and, where the method treats it as public
(under substitution), n — the number of rows that match the domain, counted when ``synth`` checks
the rows against it (the one read before the plan; nothing of it is released but n itself).
That is enough to say beforehand how much of the release will be prior or noise rather than data:

- **A posterior draw with a flat prior** (Dirichlet-multinomial, beta-binomial, DP-prior): the
  posterior mean of a cell is ``(y_k + α) / (n + Kα)``, so the prior holds the share
  ``s = Kα / (n + Kα)`` of it whatever the data are. With Abowd & Vilhuber's least prior
  ``α = n / (e^(ε/m) − 1)`` this is ``K / (K + e^(ε/m) − 1)``: independent of n. For the
  gamma-Poisson model (prior ``Gamma(c·rate·E, c·E)``) a cell's posterior mean puts the weight
  ``c / (1 + c)`` on the prior rate.
- **A noisy table** (discrete Laplace or Gaussian on every cell, negatives set to 0): a cell
  with no records gets on average ``E[max(e, 0)]`` spurious records, so a table of K cells gains
  at most ``K·E[max(e, 0)]`` of them. Their share ``s = K·E⁺ / (n + K·E⁺)`` is an upper bound
  (reached when almost every cell is empty, as in a large cross-tabulation); it needs n, which
  is public only under substitution, else a row count the steward declares (``rows``), else the
  forecast gives the break-even n at which s = 1/2.
- **The smoothed histogram**: its δ is the uniform's share of the sampling distribution.
- **modips' sanitized statistics**: the noise sd of a mean in the column's units, and the
  smallest spread (SD) a sanitized variance or sum of squares can tell from 0,
  ``sqrt(noise sd per record)``, each against the width of the column's public bounds.

- **Marginals chosen during the run** under a zCDP share ρ₃ (privsyn's): the least noise any of
  them can have, σ² ≥ θ²/(2ρ₃) per cell, and what a pair of the domain would gain at that noise.
- **The marginal methods' chosen measurements** (:mod:`dipsy.forecast_marginals`), each a noisy
  table whose noise the plan fixes, or bounds, while the run chooses which tables:
  - MST: the d − 1 pairs of its spanning tree, each at ρ/(3(d − 1)). Every tree's worst pair has
    between s_min·s_max cells (the widest column joined to the narrowest) and the largest pair's.
  - AIM: the rounds' marginals, from a one-way to the largest candidate, with noise between what
    0.9·ρ/T and the largest remainder a last round can keep allow.
  - DPSyn: each regime the noisy total can pick, with the range of its group and marginal ε. The
    regimes' odds are given when n is known.
  - The random decision trees: each tree's leaves × labels (the plan grows the trees from public
    inputs), the bound averaged over a column's trees.

Each part gets a verdict against stated thresholds (:data:`SHARE_NOISE`, …); the release's is the
worst part's. A part whose tables the run chooses gets a verdict only when it holds for every table
the run could measure. It is "weak" when even the least bad of them is; it is "useful" only when even
the worst is useful. Otherwise the part gets no verdict: it states the range, and the forecast lists
the part among those not forecast. The public regime of dpsyn and the pseudo-posterior's
data-dependent costs get no verdict either. Every figure is a function of public inputs only, so
the forecast may go into ``release.json``.

>>> from dipsy.domain import Domain
>>> from dipsy.methods import get
>>> from dipsy.privacy import PureDP
>>> d = Domain.from_sizes({"a": 40, "b": 40, "c": 40})
>>> f = forecast(get("dirichlet-multinomial")(PureDP(1.0)).plan(1000, d), d)
>>> f.verdict, round(f.parts[0]["figures"]["prior_share"], 4)
('noise', 1.0)
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .domain import Domain
from .errors import DipsyError
from .forecast_noise import SHARE_NOISE, SHARE_WEAK, discrete_laplace_positive, noise_ratio, positive_noise
from .methods.base import MAX_ROWS
from .privacy.measurement import DiscreteGaussian, DiscreteLaplace, Laplace, PosteriorDraw, Table, discrete_laplace_variance

#: A sanitized spread is "noise" when it cannot resolve an SD of an eighth of the column's
#: bounds (skewed survey amounts, with the bound at a plausible maximum, have SDs about that size
#: or smaller), "weak" below a fortieth.
SPREAD_NOISE, SPREAD_WEAK = 1 / 8, 1 / 40
#: A sanitized mean is "noise" when its noise sd exceeds a twentieth of the bounds' width, "weak"
#: from a two-hundredth.
MEAN_NOISE, MEAN_WEAK = 1 / 20, 1 / 200

VERDICTS = ("useful", "weak", "noise")  # in order of severity; "unknown" is apart
HEADLINES = {
    "noise": "the release will be essentially noise",
    "weak": "the release will be weak",
    "useful": "the data will dominate the release",
    "unknown": "no verdict",
}


@dataclass(frozen=True)
class Forecast:
    """The expected error of one planned release (public: a function of the plan only)."""

    method: str
    verdict: str
    parts: tuple[dict, ...]
    inputs: tuple[str, ...]
    advice: tuple[str, ...] = ()
    not_forecast: tuple[str, ...] = field(default_factory=tuple)

    @property
    def noise(self) -> bool:
        """Whether the release is forecast to be essentially noise (``synth`` refuses it)."""
        return self.verdict == "noise"

    def summary(self) -> str:
        """One plain sentence: the verdict and the worst part's reason."""
        worst = [p for p in self.parts if p["verdict"] == self.verdict]
        reason = f": {worst[0]['text']}" if worst else ""
        tail = f" — {'; '.join(self.advice)}" if self.advice and self.verdict in ("noise", "weak") else ""
        unknown = [p["what"] for p in self.parts if p["verdict"] not in VERDICTS]
        unjudged = unknown + [s for s in self.not_forecast if not any(s.startswith(u) for u in unknown)]
        if self.verdict == "useful" and unjudged:  # useful where judged: never said of the parts no one could judge
            tail += f" — in the parts forecast; no verdict on {len(unjudged)} other{'s' if len(unjudged) > 1 else ''} ({'; '.join(unjudged)})"
        return f"{HEADLINES[self.verdict]}{reason}{tail}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "summary": self.summary(),
            "parts": [dict(p) for p in self.parts],
            "public_inputs": list(self.inputs),
            "not_forecast": list(self.not_forecast),
            "thresholds": (
                f"share of prior or noise ≥ {SHARE_NOISE:g}: noise, ≥ {SHARE_WEAK:g}: weak; smallest resolvable SD ≥ "
                f"{SPREAD_NOISE:g} of the bounds' width: noise, ≥ {SPREAD_WEAK:g}: weak; noise sd of a mean ≥ "
                f"{MEAN_NOISE:g} of the width: noise, ≥ {MEAN_WEAK:g}: weak"
            ),
            "advice": list(self.advice),
        }


def check_declared_rows(rows: Any) -> None:
    """Refuse a declared row count (``--rows``, ``rows=``) that is not a whole number from 1 to
    :data:`~dipsy.methods.base.MAX_ROWS` (None: none declared): the forecast divides by it and
    turns it into a float.

    >>> check_declared_rows(0)
    Traceback (most recent call last):
    ...
    dipsy.errors.DipsyError: the declared row count must be a whole number from 1 to 1,000,000,000, got 0; pass --rows (rows=) with the number of rows you declare public, e.g. 1000, or leave it out
    """
    if rows is None:
        return
    if isinstance(rows, bool) or not isinstance(rows, numbers.Integral) or not 1 <= int(rows) <= MAX_ROWS:
        shown = repr(rows) if len(repr(rows)) <= 40 else repr(rows)[:37] + "..."
        raise DipsyError(
            f"the declared row count must be a whole number from 1 to {MAX_ROWS:,}, got {shown}",
            "pass --rows (rows=) with the number of rows you declare public, e.g. 1000, or leave it out",
        )


def forecast(plan: Any, domain: Domain, rows: int | None = None, method: str = "") -> Forecast:
    """The forecast of ``plan``'s release over ``domain``.

    Parameters
    ----------
    plan
        The method's :class:`~dipsy.methods.base.Plan` (made from public inputs).
    domain
        The released columns' public domain.
    rows
        A number of rows the steward declares public (an estimate from the survey design, or a
        published count), used where the plan does not hold n (add/remove relations).
    method
        The method's name, for the advice.
    """
    check_declared_rows(rows)
    n = plan.parameters.get("n") if isinstance(plan.parameters.get("n"), int) else None
    inputs = ["the domain", "the budget and the number of sets"]
    if n is not None:
        inputs.append(
            f"n = {n}, the rows that match the domain, counted when the rows were checked against it before the "
            "forecast (public under the release's relation)"
        )
    elif rows is not None:
        n = rows
        inputs.append(f"n ≈ {rows} rows, declared public by the steward for this forecast")
    from .forecast_marginals import is_leaf_count, leaf_parts, marginal_parts

    parts, skipped, leaves = [], [], []
    for m in plan.measurements:
        if is_leaf_count(m):  # random decision trees: one part per sensitive column, below
            leaves.append(m)
            continue
        part = _part(m, domain, n)
        if part is not None:
            parts.append(part)
        elif not _silent(m):
            skipped.append(m.label)
    if leaves:
        parts += leaf_parts(leaves, domain, n, plan.parameters)
    extra = marginal_parts(plan, domain, n)  # MST, AIM, DPSyn; None for any other plan
    if extra is None and plan.adaptive is not None:
        chosen = _chosen_marginals(plan, domain, n)  # privsyn's
        extra = [] if chosen is None else [chosen]
    parts += extra or []
    if plan.adaptive is not None and not any(p["what"] == plan.adaptive_label and p["verdict"] in VERDICTS for p in parts):
        skipped.append(f"{plan.adaptive_label} (chosen during the run)")  # a verdict holds for every run, or it is listed
    # worst first, and within a verdict the largest share of prior or noise first
    parts = sorted(_merge_sets(parts), key=lambda p: (-_severity(p["verdict"]), -(p["share"] or 0.0)))
    judged = [p["verdict"] for p in parts if p["verdict"] in VERDICTS]
    verdict = max(judged, key=VERDICTS.index) if judged else "unknown"
    return Forecast(method, verdict, tuple(parts), tuple(inputs), tuple(_advice(method, verdict, parts)), tuple(skipped))


def _severity(verdict: str) -> int:
    return VERDICTS.index(verdict) if verdict in VERDICTS else -1


# -- one measurement -----------------------------------------------------------------------------


def _silent(m: Any) -> bool:
    """Measurements with no error of their own to forecast: values declared public, a noisy total."""
    from .privacy.measurement import DeclaredPublic, Total

    return isinstance(m.query, Total) or isinstance(m.mechanism, DeclaredPublic)


def _cells(query: Any, domain: Domain) -> int | None:
    if not isinstance(query, Table):
        return None
    source = query.domain or domain
    if not all(c in source for c in query.columns):
        return None
    sizes = [source[c].size for c in query.columns]
    return math.prod(s for s in sizes if s is not None) if None not in sizes else None  # None: a column without cells


def _part(m: Any, domain: Domain, n: int | None) -> dict | None:
    mech = m.mechanism
    if isinstance(mech, PosteriorDraw):
        return _posterior(m, domain, n)
    if isinstance(mech, (DiscreteLaplace, DiscreteGaussian, Laplace)):
        cells = _cells(m.query, domain)
        return None if cells is None else _table(m.label, m.query.columns, cells, positive_noise(mech), _sd(mech), n)
    name = type(mech).__name__
    if name == "SmoothedDraw":
        return _share_part(
            m.label, mech.delta, f"the uniform is δ = {mech.delta:.3g} of the sampling distribution", {"delta": mech.delta}
        )
    if name == "Sanitization":
        return _sanitization(m.label, mech, domain, n)
    return None


def _chosen_marginals(plan: Any, domain: Domain, n: int | None) -> dict | None:
    """Marginals chosen during the run under a zCDP share ρ₃ (privsyn's): the least noise they can have.

    Whichever marginals the run chooses share ρ₃ (one set's, with m sets), so each has discrete
    Gaussian noise of σ² ≥ θ²/(2ρ₃) per cell — the bound is reached when one marginal takes all
    of it. Figures for the pairs of the domain at that least noise: the spurious records a pair of
    c cells may gain, c·E⁺. The selection weighs each pair's noise against its dependency score,
    which is data (a noisy measurement of the run), so no verdict can say the pairs will be good;
    but with n known, when even the smallest pair at that least noise would be
    :data:`SHARE_WEAK` or more noise, every pair the run could choose is at least that bad:
    "weak" (never "noise": the run may choose no pair and release its one-way marginals, which
    are judged on their own).
    """
    from .privacy import ZCDP

    spends = getattr(plan, "adaptive_sets", ()) or ()
    budget = spends[0].budget if spends else plan.adaptive
    theta = plan.parameters.get("theta")
    if (
        not isinstance(budget, ZCDP)
        or not isinstance(plan.parameters.get("one_way_sigma2"), Mapping)
        or not isinstance(theta, int)
    ):
        return None  # privsyn's plans only: one σ² per column
    sizes = domain.shape(domain.names)
    pairs = sorted(a * b for i, a in enumerate(sizes) for b in sizes[i + 1 :])
    if not pairs:
        return None
    least = DiscreteGaussian.for_budget(budget, theta)
    positive, sd = positive_noise(least), _sd(least)
    smallest, middle, largest = pairs[0], pairs[len(pairs) // 2], pairs[-1]
    figures = {
        "rho_chosen": budget.rho,
        "least_noise_sd_per_cell": sd,
        "spurious_per_empty_cell_at_least_noise": positive,
        "pair_cells": {"smallest": smallest, "median": middle, "largest": largest},
        "spurious_at_least_noise": {"smallest": smallest * positive, "median": middle * positive, "largest": largest * positive},
    }
    text = (
        f"each chosen marginal has noise sd ≥ {sd:.3g} per cell (all of ρ = {budget.rho:.4g} on it); at that noise a pair of "
        f"{middle:,} cells (the median pair) may gain {middle * positive:,.0f} spurious records, the largest "
        f"({largest:,} cells) {largest * positive:,.0f}"
    )
    verdict = "unknown"
    if n is not None:
        figures["n"] = n
        text += f", against n = {n:,}"
        best = smallest * positive / (n + smallest * positive)  # the least noise share any chosen pair can have
        figures["noise_share_at_least"] = best
        if best >= SHARE_WEAK:
            verdict = "weak"
            text += (
                f"; even the smallest pair ({smallest:,} cells) would be {noise_ratio(best)} noise at the least noise, so any "
                "relationship between two columns is mostly lost"
            )
    return {
        "what": plan.adaptive_label,
        "verdict": verdict,
        "share": None,
        "figures": figures,
        "text": text + "; which marginals the run chooses, and so their noise, depends on its noisy scores",
    }


def _share_part(what: str, share: float, text: str, figures: Mapping[str, Any]) -> dict:
    verdict = "noise" if share >= SHARE_NOISE else "weak" if share >= SHARE_WEAK else "useful"
    return {"what": what, "verdict": verdict, "share": share, "text": text, "figures": dict(figures)}


def _posterior(m: Any, domain: Domain, n: int | None) -> dict | None:
    mech, cells = m.mechanism, _cells(m.query, domain)
    if "gamma" in mech.name.lower():  # Gamma(c·rate·E, c·E): the prior's weight is c/(1 + c) per cell
        share = mech.strength / (1 + mech.strength)
        return _share_part(
            m.label,
            share,
            f"the public prior (rate × exposure) holds {noise_ratio(share)} of every cell's posterior mean: "
            "the release mostly repeats the exposures",
            {"strength": mech.strength, "prior_share": share},
        )
    if cells is None or n is None:
        return None
    prior = cells * mech.strength
    share = prior / (n + prior)
    return _share_part(
        m.label,
        share,
        f"the prior outweighs the data {noise_ratio(share)} at this ε over {cells:,} cells"
        if share >= 0.5
        else f"the prior holds {noise_ratio(share)} of the posterior over {cells:,} cells",
        {"cells": cells, "prior_per_cell": mech.strength, "prior_share": share, "n": n},
    )


def _sd(mech: Any) -> float:
    if isinstance(mech, DiscreteGaussian):
        return mech.sd
    desc = mech.describe()
    return float(desc.get("sd", math.sqrt(2) * float(getattr(mech, "scale", 0))))


def _table(what: str, columns: Sequence[str], cells: int, positive: float, sd: float, n: int | None) -> dict:
    spurious = cells * positive
    figures = {"cells": cells, "noise_sd_per_cell": sd, "spurious_per_empty_cell": positive, "spurious_at_most": spurious}
    if n is None:  # n is not public here: the break-even size instead of a verdict
        figures["break_even_n"] = spurious
        return {
            "what": what,
            "verdict": "unknown",
            "share": None,
            "figures": figures,
            "text": f"noise may add up to {spurious:,.0f} spurious records over {cells:,} cells (sd {sd:.3g} per cell); "
            f"with fewer than {spurious:,.0f} rows they would outnumber the data (declare --rows to judge)",
        }
    share = spurious / (n + spurious)
    figures |= {"n": n, "mean_count_per_cell": n / cells, "noise_share_at_most": share}
    return _share_part(
        what,
        share,
        f"up to {noise_ratio(share)} of the records may be noise over {cells:,} cells "
        f"(noise sd {sd:.3g} per cell against {n / cells:.3g} records per cell on average)",
        figures,
    )


def _sanitization(what: str, mech: Any, domain: Domain, n: int | None) -> dict | None:
    """modips' statistics: resolvable spread and mean precision against the public width."""
    worst = None
    numeric = [c for c in domain.columns if c.kind in ("integer", "numeric")]
    for comp, scale in zip(mech.components, mech.scales):
        # the scales already hold truncation's doubling (modips.noise, eq. N6): the noise is Laplace of that scale
        sd = math.sqrt(discrete_laplace_variance(scale)) if comp.discrete else math.sqrt(2) * float(scale)
        name = comp.name
        column = next((c for c in numeric if c.name in name), numeric[0] if len(numeric) == 1 else None)
        if comp.discrete:  # cell counts: as a noisy table of exact discrete Laplace noise
            part = None if n is None else _table(f"{what}: {name}", (), comp.size, discrete_laplace_positive(scale), sd, n)
        elif column is None:
            continue
        else:
            assert column.lower is not None and column.upper is not None, "Column checks every numeric column's bounds"
            width = float(column.upper) - float(column.lower)
            per_record = not any(w in name for w in ("sum", "cross"))
            if per_record:
                noise = sd
            elif n is None:
                continue
            else:
                noise = sd / n
            if any(w in name for w in ("variance", "squares", "cross")):
                spread = math.sqrt(noise)
                ratio = spread / width
                verdict = "noise" if ratio >= SPREAD_NOISE else "weak" if ratio >= SPREAD_WEAK else "useful"
                part = {
                    "what": f"{what}: {name}",
                    "verdict": verdict,
                    "share": None,
                    "figures": {"noise_sd_per_record": noise, "smallest_resolvable_sd": spread, "width": width},
                    "text": f"spreads of {column.name} below an SD of {spread:,.4g} cannot be told from 0 "
                    f"(its bounds are {width:,.4g} wide)",
                }
            else:
                ratio = noise / width
                verdict = "noise" if ratio >= MEAN_NOISE else "weak" if ratio >= MEAN_WEAK else "useful"
                part = {
                    "what": f"{what}: {name}",
                    "verdict": verdict,
                    "share": None,
                    "figures": {"mean_noise_sd": noise, "width": width},
                    "text": f"the mean of {column.name} carries noise of sd {noise:,.4g} (its bounds are {width:,.4g} wide)",
                }
        if part is not None and (worst is None or VERDICTS.index(part["verdict"]) > VERDICTS.index(worst["verdict"])):
            worst = part
    return worst


def _merge_sets(parts: list[dict]) -> list[dict]:
    """One part per measurement and text: m sets with the same noise say it once, with the count."""
    out: dict[tuple[str, str], dict] = {}
    for p in parts:
        key = (re.sub(r"set \d+ of \d+", "set k", p["what"]), p["text"])
        if key in out:
            out[key]["sets"] = out[key].get("sets", 1) + 1
        else:
            out[key] = dict(p)
    return list(out.values())


def _advice(method: str, verdict: str, parts: Sequence[Mapping[str, Any]]) -> list[str]:
    """What would do better, naming the cause: the advice of the parts that set the verdict (the
    marginal methods' and the trees' parts name their own budget split), else of any part that
    has some, else the method's."""
    if verdict not in ("noise", "weak"):
        return []
    for chosen in ([p for p in parts if p["verdict"] == verdict], parts):
        own = list(dict.fromkeys(a for p in chosen for a in p.get("advice", ())))
        if own:
            return own
    if method in ("dirichlet-multinomial", "dp-prior", "laplace-sanitizer", "beta-binomial"):
        cells = max((p["figures"].get("cells", 0) for p in parts), default=0)
        return [
            f"fewer columns or coarser bins ({cells:,} cells now)",
            "a marginal method would do better (aim, mst or privsyn, given --delta or --rho: with no --method, "
            "a budget with δ or ρ runs privsyn; dpsyn, given a public file)",
            "or a larger ε",
        ]
    if method == "smoothed-histogram":
        return ["perturbed-histogram puts noise on each bin instead of mixing in the uniform", "or fewer, wider bins"]
    if method == "perturbed-histogram":
        return ["fewer, wider bins", "or a larger ε"]
    if method == "modips":
        return ["tighter public bounds (or clip: true top-coding in the domain): the noise scales with them", "or a larger ε"]
    return ["a larger ε or a smaller domain"]
