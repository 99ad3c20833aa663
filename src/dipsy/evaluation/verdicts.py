"""One plain sentence per section of the evaluation: good enough or not, by a stated threshold.

Each function reads one section of :func:`dipsy.evaluation.evaluate`'s result (the JSON layout)
and returns a :class:`Verdict` — a level (``"good"``, ``"caution"``, ``"poor"``) and a sentence
that names the number, the threshold and what it means — or None when the section holds nothing
to judge. They are pure functions of those numbers, so the report, ``metrics.json`` and the
tests all get the same sentence.

The thresholds are below as named constants, each with the reason it sits where it does. They are
rules of thumb for a steward's first reading, not tests of significance: a release can pass every
one and still fail the analysis someone cares about (the inference section checks one such
analysis), and a flag says where to look, not that the release is useless.

>>> marginals({"2-way": {"mean_tvd": 0.12, "worst_tvd": 0.3, "worst_columns": ["a", "b"]}}).level
'poor'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Mean two-way TVD at or under which the marginals are called close: 5 % of the rows would have
#: to move in the average two-way table, about what sampling alone costs a 1,000-record sample of a
#: 10-cell table (E TVD ≈ ½ sqrt(2K / (π n)) = 0.04 for K = 10, n = 1,000).
MARGINAL_TVD_OK = 0.05
#: Mean two-way TVD over which the marginals are called far off: one row in ten in the wrong cell
#: of the average table, twice the sampling level above and enough to change a cross-tabulation's
#: reading.
MARGINAL_TVD_FLAG = 0.10
#: A release's mean two-way TVD within this factor of the sampling floor (a resample of the original
#: as large as a synthetic set, :mod:`.yardsticks`) is called near it: the synthesis then costs at
#: most what sampling costs once more, the least a DP release, which adds noise to a sample, can do.
NEAR_FLOOR = 2.0
#: A numeric column's U_m or mean shift beyond this factor of its floor (the larger of the sampling
#: and the binning floor) is called far off, whatever the one-way yardstick: a sample's distances
#: shrink as 1 / sqrt(n), so five times sampling's distance is what a sample of a 25th of the rows
#: gives (twice, :data:`NEAR_FLOOR`, a quarter of them).
FAR_FROM_FLOOR = 5.0
#: Largest ECDF gap U_m (the KS statistic) over which a numeric column is flagged (without its
#: yardsticks, as in an evaluation written before them): the two-sample
#: KS test's 5 % critical value, 1.36 sqrt(2 / n), is 0.061 at n = 1,000 per side, so a gap of 0.1
#: is beyond sampling error from about 370 records up; and a tenth of the rows on the wrong side of
#: some value is visible in any plot.
NUMERIC_UM_FLAG = 0.10
#: Relative shift of a mean over which it is flagged: beyond the sampling error of a mean of 1,000
#: records (CV / sqrt(n), 3 % for a column whose SD equals its mean), and a change a reader of a
#: published mean or total would notice.
MEAN_SHIFT_FLAG = 0.05
#: A synthetic U_m or mean shift within this factor of the binning floor's is put down to the bins:
#: the floor is one draw of the best case, and a DP method adds its noise on top of it.
FLOOR_MARGIN = 1.5
#: pMSE ratio (pMSE / its null mean) at or under which the sets are called hard to tell apart.
#: Under the null the ratio is χ²_{k−1} / (k − 1): it exceeds 2 with probability 4 % at k − 1 = 8
#: and under 0.1 % from k − 1 = 30, so a ratio over 2 is a difference the classifier found.
PMSE_RATIO_OK = 2.0
#: Share of the independent-columns yardstick's excess over the null, (ratio − 1) / (R_ind − 1),
#: at or over which the sets are called easy to tell apart: the classifier then finds at least half
#: as much as in the original with every column shuffled on its own, which keeps every marginal and
#: no relationship. The ratio itself grows with the rows (its null shrinks like k / N), the share
#: does not.
PMSE_INDEPENDENT_SHARE = 0.5
#: Correlation from which a relationship in the original counts: Cohen's "small" effect. Weaker
#: ones are too noisy at survey sizes (the SE of r is 0.03 at n = 1,000) for a ratio of slopes to
#: mean anything.
MATERIAL_CORRELATION = 0.1
#: A relationship is called lost when the synthetic slope (or correlation) is under this share of
#: the original's, or over its inverse, or of the other sign: a slope halved (or doubled) changes
#: any substantive reading of it.
SLOPE_KEPT = 0.5
#: Share of the material relationships lost over which the section is called poor (under it, with
#: some lost, caution).
LOST_SHARE_FLAG = 0.2
#: Standardised difference |synthetic − original| / SE(original) over which a coefficient is
#: flagged: the synthetic estimate lies outside the original's 95 % interval.
STD_DIFF_FLAG = 1.96

LEVELS = ("good", "caution", "poor")


@dataclass(frozen=True)
class Verdict:
    """A section's verdict: ``level`` is ``"good"``, ``"caution"`` or ``"poor"``; ``text`` one
    sentence with the number and its threshold."""

    level: str
    text: str

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"a verdict's level is one of {LEVELS}, not {self.level!r}")

    def to_dict(self) -> dict[str, str]:
        return {"level": self.level, "text": self.text}


# -- helpers -------------------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _num(value: Any) -> float:
    """A finite float, or NaN (None, text, NaN, infinities, booleans)."""
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        x = float(value)
    except (TypeError, ValueError):
        return math.nan
    return x if math.isfinite(x) else math.nan


def _mean(values: Any) -> float:
    """Mean of the finite values of a number or a list; NaN when there are none."""
    items = values if isinstance(values, (list, tuple, np.ndarray)) else [values]
    xs = [v for v in (_num(x) for x in items) if not math.isnan(v)]
    return float(np.mean(xs)) if xs else math.nan


def _g(x: float, digits: int = 3) -> str:
    """A number in a sentence: 3 significant digits, thousands separated."""
    if math.isnan(x):
        return "—"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{digits}g}"


def _short(x: float) -> str:
    """A bin edge: 250000 -> '250k', 1000000 -> '1M'."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return f"{x / size:.4g}{suffix}"
    return f"{x:.4g}"


def _pct(x: float) -> str:
    """A signed percentage: +7.7 %."""
    return f"{x * 100:+.1f} %" if abs(x) < 0.1 else f"{x * 100:+.0f} %"


# -- sections ------------------------------------------------------------------------------------


def marginals(part: Mapping[str, Any]) -> Verdict | None:
    """Mean TVD of the two-way marginals (one-way when there is a single column).

    >>> marginals({"2-way": {"mean_tvd": 0.03, "worst_tvd": 0.06, "worst_columns": ["a", "b"]}}).text[:61]
    'Two-way marginals: mean TVD 0.03 ≤ 0.05 (worst a × b: 0.06): '
    """
    for key, name in (("2-way", "Two-way"), ("1-way", "One-way")):  # noqa: B007 - the order found is used after the loop
        order = _mapping(part.get(key))
        tvd = _num(order.get("mean_tvd"))
        if not math.isnan(tvd):
            break
    else:
        return None
    worst = " × ".join(map(str, order.get("worst_columns") or []))
    worst_text = f" (worst {worst}: {_g(_num(order.get('worst_tvd')))})" if worst else ""
    y = _mapping(part.get("yardsticks"))
    floor, independent = _num(y.get("floor")), _num(y.get("independent"))
    synthesized, ys = _mapping(part.get("synthesized")), _mapping(y.get("synthesized"))
    if key == "2-way" and ys and not math.isnan(_num(synthesized.get("score"))):
        # columns released as they are make their own pairs exact: judge the pairs that hold a synthesized one
        tvd, floor, independent = 1 - _num(synthesized.get("score")) / 1000, _num(ys.get("floor")), _num(ys.get("independent"))
        repeated = ", ".join(map(str, synthesized.get("repeated") or []))
        worst_text = (
            f" (over the {_g(_num(ys.get('pairs')))} pairs that hold a synthesized column; {repeated} released as they are)"
        )
    if key == "2-way" and not (math.isnan(floor) or math.isnan(independent)):
        return _against_yardsticks(tvd, floor, independent, y, worst_text)
    if tvd <= MARGINAL_TVD_OK:
        return Verdict(
            "good",
            f"{name} marginals: mean TVD {_g(tvd)} ≤ {MARGINAL_TVD_OK}{worst_text}: "
            "the tables of the columns are reproduced about as closely as sampling alone allows.",
        )
    if tvd <= MARGINAL_TVD_FLAG:
        return Verdict(
            "caution",
            f"{name} marginals: mean TVD {_g(tvd)} > {MARGINAL_TVD_OK}{worst_text}: "
            f"on average {tvd:.0%} of the rows sit in a different cell of a table than in the original.",
        )
    return Verdict(
        "poor",
        f"{name} marginals: mean TVD {_g(tvd)} > {MARGINAL_TVD_FLAG}{worst_text}: "
        f"on average {tvd:.0%} of the rows sit in a different cell — tabulations of the release will differ visibly.",
    )


def _against_yardsticks(tvd: float, floor: float, independent: float, y: Mapping[str, Any], worst_text: str) -> Verdict:
    """The two-way verdict from the yardsticks: good near the sampling floor and closer than
    independent columns (or where independence itself is within the floor's band: columns with
    little joint structure), poor when no closer than independent columns, caution between.

    >>> v = _against_yardsticks(0.03, 0.02, 0.09, {"rows": 100, "noise": None}, "")
    >>> v.level, v.text[:60]
    ('good', 'Two-way marginals: mean TVD 0.03, against 0.02 for a resampl')
    >>> _against_yardsticks(0.1, 0.02, 0.09, {"rows": 100, "noise": None}, "").level
    'poor'
    """
    noise = _mapping(y.get("noise"))
    budget = f"at the same budget ({noise.get('budget')})" if noise else "with exact one-way tables"
    numbers = (
        f"Two-way marginals: mean TVD {_g(tvd)}, against {_g(floor)} for a resample of the original of "
        f"{_g(_num(y.get('rows')))} rows and {_g(independent)} for independent columns {budget}{worst_text}"
    )
    structure = independent > NEAR_FLOOR * floor  # the original's pairs hold more than sampling error
    if tvd <= NEAR_FLOOR * floor and (tvd < independent or not structure):
        why = (
            "near what sampling alone costs, and closer than columns that keep no relationship."
            if structure
            else "near what sampling alone costs; the columns hold little joint structure beyond sampling error."
        )
        return Verdict("good", f"{numbers}: {why}")
    if tvd < independent:
        return Verdict(
            "caution",
            f"{numbers}: closer than independent columns but {tvd / floor:.1f} times sampling's distance "
            f"(near is within {NEAR_FLOOR:g} times): the relationships are kept only in part.",
        )
    return Verdict(
        "poor",
        f"{numbers}: no closer than columns drawn independently — the release keeps none of the joint "
        "structure one-way tables lack.",
    )


def numeric(part: Mapping[str, Any]) -> Verdict | None:
    """ECDF gap U_m and relative mean shift of each numeric column, against its yardsticks.

    Each column's two figures (U_m and the mean's shift, means over sets) are set against its floor,
    the larger of the sampling floor (a resample of the original as large as a set) and the binning
    floor (the original redrawn inside its bins), and against a one-way histogram of the column at
    the release's budget (:func:`dipsy.evaluation.numeric.numeric_yardsticks`). A column is good
    when both are within the band :func:`near_band` sets for the section's figures (at least
    :data:`NEAR_FLOOR` times its floor; and so no worse than the histogram, or the histogram itself
    is that near); poor when either is no better than the histogram where the histogram itself is
    beyond that band, or beyond :data:`FAR_FROM_FLOOR` times the floor; caution between. The floors
    are root mean squares, so the band is a number of standard errors, widened for the number of
    figures judged: a resample of the original itself reads caution in about one section in twenty,
    never poor. The section takes its worst column's level and names it with all its numbers. An
    evaluation without yardsticks is judged by :func:`_numeric_fixed`.

    >>> y = {"rows": 1000, "floor": {"U_m": 0.03, "mean_shift": 0.02}, "independent": {"U_m": 0.2, "mean_shift": 0.1}}
    >>> numeric({"x": {"U_m": [0.05], "mean_original": 10.0, "mean_synthetic": [10.3], "yardsticks": y}}).level
    'good'
    >>> numeric({"x": {"U_m": [0.25], "mean_original": 10.0, "mean_synthetic": [10.3], "yardsticks": y}}).level
    'poor'
    """
    columns = {c: _mapping(v) for c, v in part.items() if isinstance(v, Mapping)}
    if not columns:
        return None
    if not all(_mapping(s.get("yardsticks")) for s in columns.values()):
        return _numeric_fixed(part)
    band = near_band(2 * len(columns))  # two figures a column, each of which a resample could push past the band
    judged = sorted((_numeric_column(name, stats, band) for name, stats in columns.items()), key=lambda c: (-c[0], -c[1]))
    rank, _, name, text, why = judged[0]
    others = {
        level: [n for r, _, n, _, _ in judged[1:] if r == LEVELS.index(level)] for level in LEVELS if LEVELS.index(level) > 0
    }
    also = "".join(f" Also {level}: {', '.join(names)}." for level, names in reversed(others.items()) if names)
    lead = f"Worst numeric column {name}" if len(judged) > 1 else name
    return Verdict(LEVELS[rank], f"{lead}: {text}: {why}{also}")


def near_band(figures: int) -> float:
    """How many floors (root-mean-square errors of a resample) from the floor a figure may sit and be
    called near, when a section is judged by the worst of ``figures`` figures: :data:`NEAR_FLOOR`, or
    the two-sided normal quantile that a resample passes with probability 0.05 / ``figures``
    (Bonferroni), whichever is larger. A resample of the original then reads caution in about one
    section in twenty however many columns it has, not in almost every one of Adult's 14.

    >>> near_band(1), round(near_band(4), 2), round(near_band(28), 2)
    (2.0, 2.5, 3.12)
    """
    from scipy.stats import norm

    return max(NEAR_FLOOR, float(norm.isf(0.05 / (2 * max(figures, 1)))))


def _numeric_column(name: str, stats: Mapping[str, Any], band: float = 2.0) -> tuple[int, float, str, str, str]:
    """One column against its yardsticks, near within ``band`` floors: (level's index, how many floors away,
    name, its numbers, why)."""
    um = _mean(stats.get("U_m"))
    orig = _num(_mapping(stats.get("mean")).get("original", stats.get("mean_original")))
    syn = _mean(_mapping(stats.get("mean")).get("synthetic", stats.get("mean_synthetic")))
    shift = (syn - orig) / abs(orig) if orig and not math.isnan(orig) else math.nan
    y = _mapping(stats.get("yardsticks"))
    sampling, ind, bins = _mapping(y.get("floor")), _mapping(y.get("independent")), _mapping(stats.get("floor"))
    # per measure: the release's figure, the sampling floor, the binning floor, the histogram's
    measures = {
        "U_m": (um, _num(sampling.get("U_m")), _num(bins.get("U_m")), _num(ind.get("U_m"))),
        "mean": (
            abs(shift),
            _num(sampling.get("mean_shift")),
            abs(_num(bins.get("expected_mean_shift"))),
            _num(ind.get("mean_shift")),
        ),
    }
    near, worse, far, by_bins, times = True, False, False, False, 0.0
    for value, s_floor, b_floor, histogram in measures.values():
        if math.isnan(value):
            continue
        floor = max(x for x in (s_floor, b_floor, 0.0) if not math.isnan(x))
        ratio = value / floor if floor > 0 else (math.inf if value > 0 else 0.0)
        times = max(times, ratio)
        here = ratio <= band
        near &= here
        # no better than the histogram, where the histogram itself is beyond the floor's band (where it
        # is within it, the floor alone judges: a resample lands past twice the floor at times)
        worse |= not math.isnan(histogram) and value >= histogram > band * floor
        far |= ratio > FAR_FROM_FLOOR
        by_bins |= not math.isnan(b_floor) and b_floor > s_floor and value > band * s_floor
    rows = _g(_num(y.get("rows")))
    parts = [
        f"a resample of the original of {rows} values (U_m {_g(measures['U_m'][1])}, mean ±{_unsigned(measures['mean'][1])})"
    ]
    if bins:
        parts.append(
            f"its values redrawn inside their bins (U_m {_g(measures['U_m'][2])}, mean {_pct_or_dash(_num(bins.get('expected_mean_shift')))}"
            f"{_top_bin(bins)})"
        )
    if ind:
        noise = _mapping(y.get("noise"))
        budget = f"at the same budget ({noise.get('budget')})" if noise else "from the exact one-way table"
        parts.append(f"its histogram alone {budget} (U_m {_g(measures['U_m'][3])}, mean off by {_unsigned(measures['mean'][3])})")
    text = f"U_m {_g(um)}, mean {_pct_or_dash(shift)}, against {_and(parts)}"
    bins_note = " — the domain's bins, not the method, set this limit: narrower public bins would lower it" if by_bins else ""
    if near:
        return (0, times, name, text, f"within {band:.3g} times what sampling and the bins cost{bins_note}.")
    if worse:
        why = "no closer than the column's histogram alone at the same budget: a release that keeps nothing else would reproduce it as well."
        return (2, times, name, text, why)
    if far:
        return (
            2,
            times,
            name,
            text,
            f"{times:.1f} times what sampling and the bins cost (far is beyond {FAR_FROM_FLOOR:g} times).",
        )
    closer = "closer than its histogram alone, but " if ind else ""
    return (
        1,
        times,
        name,
        text,
        f"{closer}{times:.1f} times what sampling and the bins cost (near is within {band:.3g} times).",
    )


def _unsigned(x: float) -> str:
    """An unsigned percentage: 0.9 %."""
    return "—" if math.isnan(x) else _pct(x).lstrip("+")


def _pct_or_dash(x: float) -> str:
    return "—" if math.isnan(x) else _pct(x)


def _top_bin(floor: Mapping[str, Any]) -> str:
    """The bin that moves the binning floor's mean most, with its share: ', +13 % of it from 250k–1M'."""
    bins = [b for b in floor.get("bins") or [] if isinstance(b, Mapping)]
    if not bins or math.isnan(_num(floor.get("expected_mean_shift"))):
        return ""
    top = bins[0]
    return (
        f", {_pct(_num(top.get('shift')))} of it from the bin {_short(_num(top.get('lower')))}–{_short(_num(top.get('upper')))}"
    )


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _numeric_fixed(part: Mapping[str, Any]) -> Verdict | None:
    """The numeric verdict by fixed thresholds, for an evaluation without yardsticks.

    A column is flagged when U_m (mean over sets) exceeds :data:`NUMERIC_UM_FLAG` or its mean
    (over sets) moves by more than :data:`MEAN_SHIFT_FLAG`. When the floor (the original redrawn
    inside its bins) is flagged too and the synthetic figures are within :data:`FLOOR_MARGIN` of
    its, the flag is put down to the bins: caution, not poor.
    """
    columns = {c: _mapping(v) for c, v in part.items() if isinstance(v, Mapping)}
    if not columns:
        return None
    rows = []
    for name, stats in columns.items():
        um = _mean(stats.get("U_m"))
        orig = _num(_mapping(stats.get("mean")).get("original", stats.get("mean_original")))
        syn = _mean(_mapping(stats.get("mean")).get("synthetic", stats.get("mean_synthetic")))
        shift = (syn - orig) / abs(orig) if orig and not math.isnan(orig) else math.nan
        floor = _mapping(stats.get("floor"))
        f_um, f_shift = _num(floor.get("U_m")), _num(floor.get("expected_mean_shift"))
        flagged = um > NUMERIC_UM_FLAG or abs(shift) > MEAN_SHIFT_FLAG
        floor_flag = (f_um > NUMERIC_UM_FLAG or abs(f_shift) > MEAN_SHIFT_FLAG) and not (
            um > max(NUMERIC_UM_FLAG, FLOOR_MARGIN * f_um) or abs(shift) > max(MEAN_SHIFT_FLAG, FLOOR_MARGIN * abs(f_shift))
        )
        badness = max(
            um / NUMERIC_UM_FLAG if not math.isnan(um) else 0, abs(shift) / MEAN_SHIFT_FLAG if not math.isnan(shift) else 0
        )
        rows.append((badness, name, um, shift, flagged, floor_flag, floor, f_shift))
    rows.sort(key=lambda r: -r[0])
    badness, name, um, shift, flagged, floor_flag, floor, f_shift = rows[0]
    what = f"{name}: U_m {_g(um)}, mean {_pct(shift) if not math.isnan(shift) else '—'}"
    rule = f"(flagged past U_m {NUMERIC_UM_FLAG} or a mean shift of {MEAN_SHIFT_FLAG:.0%})"
    if not flagged:
        lead = f"Worst numeric column {what}: every numeric column" if len(rows) > 1 else f"{what}:"
        return Verdict("good", f"{lead} within U_m ≤ {NUMERIC_UM_FLAG} and a mean within {MEAN_SHIFT_FLAG:.0%} of the original.")
    if floor_flag:
        bins = [b for b in floor.get("bins") or [] if isinstance(b, Mapping)]
        cause = ""
        if bins and not math.isnan(f_shift):
            top = bins[0]
            cause = f", {_pct(_num(top.get('shift')))} of it from the bin {_short(_num(top.get('lower')))}–{_short(_num(top.get('upper')))}"
        floor_text = f"mean {_pct(f_shift)}{cause}" if not math.isnan(f_shift) else f"U_m {_g(_num(floor.get('U_m')))}"
        return Verdict(
            "caution",
            f"{what} {rule}; but the original itself, each value redrawn uniformly inside its own bin, "
            f"is off about as much or more ({floor_text}): the domain's bins, not the method, set this limit — "
            "narrower public bins would lower it.",
        )
    floor_note = f" (the binning floor: mean {_pct(f_shift)})" if not math.isnan(f_shift) else ""
    return Verdict("poor", f"{what} {rule}{floor_note}: the synthetic values are off beyond what the bins explain.")


def propensity(part: Mapping[str, Any]) -> Verdict | None:
    """The headline pMSE ratio against :data:`PMSE_RATIO_OK` and the independent-columns yardstick."""
    model = str(part.get("headline") or "logistic")
    ratio = _mean(_mapping(part.get(model)).get("ratio"))
    designs = [d for d in _mapping(part.get(model)).get("design") or [] if isinstance(d, Mapping)]
    name = f"{model} with interactions" if designs and designs[0].get("pairs") else model
    if math.isnan(ratio):
        return None
    independent = _num(_mapping(part.get("independent")).get("ratio"))
    floor = _num(_mapping(part.get("floor")).get("ratio"))
    yard = []
    if not math.isnan(independent):
        yard.append(f"the original with its columns shuffled independently scores {_g(independent)}")
    if not math.isnan(floor):
        yard.append(f"with its numeric values redrawn inside their bins, {_g(floor)}")
    yard_text = f" ({'; '.join(yard)})" if yard else ""
    head = f"pMSE ratio ({name}) {_g(ratio)}"
    if ratio <= PMSE_RATIO_OK:
        return Verdict(
            "good",
            f"{head} ≤ {PMSE_RATIO_OK:g}: the classifier does little better than on two samples of one "
            f"distribution — the sets are hard to tell from the original{yard_text}.",
        )
    share = (ratio - 1) / (independent - 1) if not math.isnan(independent) and independent > 1 else math.nan
    if not math.isnan(share) and share >= PMSE_INDEPENDENT_SHARE:
        return Verdict(
            "poor",
            f"{head} > {PMSE_RATIO_OK:g} and at least {PMSE_INDEPENDENT_SHARE:.0%} of the way from 1 to the "
            f"{_g(independent)} of the original with its columns shuffled independently: the sets are easy to tell "
            "from the original, and keep little more of the relationships between columns than such a shuffle.",
        )
    # Within a quarter of the floor either way: the bins, not the method, account for most of it.
    near_floor = not math.isnan(floor) and floor / 1.25 <= ratio <= 1.25 * floor
    tail = " — about what the binning alone costs" if near_floor else ""
    return Verdict("caution", f"{head} > {PMSE_RATIO_OK:g}: the classifier tells the sets from the original{yard_text}{tail}.")


def _lost(original: float, synthetic: float) -> bool:
    """A material relationship halved, doubled or reversed."""
    if math.isnan(original) or math.isnan(synthetic) or original == 0:
        return False
    kept = synthetic / original
    return kept < SLOPE_KEPT or kept > 1 / SLOPE_KEPT


def _material(pairs: Sequence[Mapping[str, Any]], value: str) -> list[dict[str, Any]]:
    """The material pairs (|original correlation| ≥ MATERIAL_CORRELATION, a synthetic value to
    compare), each with whether the release loses it, reverses it, and the share of the resamples
    of the original (``{value}_resample``; None without them) that lose it."""
    out = []
    for p in pairs:
        if abs(_num(p.get("corr_original"))) < MATERIAL_CORRELATION:
            continue
        o, s = _num(p.get(f"{value}_original")), _mean(p.get(f"{value}_synthetic"))
        if math.isnan(o) or math.isnan(s):
            continue
        again = [_num(r) for r in p.get(f"{value}_resample") or []]
        reversed_ = o * s < 0
        out.append(
            {
                "lost": _lost(o, s),
                "reversed": reversed_,
                "resample_lost": [_lost(o, r) for r in again] or None,
                "found": (
                    abs(s - o) / abs(o),
                    f"{p.get('x')} ~ {p.get('y')}",
                    f"{p.get('x')} ~ {p.get('y')}: {value} {_g(o)} → {_g(s)}{' (reversed)' if reversed_ else ''}",
                ),
            }
        )
    return out


def _resample_lost(material: Sequence[Mapping[str, Any]]) -> list[int] | None:
    """How many of ``material`` each resample loses; None when a pair has no resample values."""
    draws = [m["resample_lost"] for m in material]
    if not draws or any(d is None for d in draws) or len({len(d) for d in draws}) != 1:
        return None
    return [int(sum(d[k] for d in draws)) for k in range(len(draws[0]))]


def relationship_floor(part: Mapping[str, Any]) -> dict[str, Any] | None:
    """What resamples of the original as large as a set lose of the material relationships of a
    relationships section, by :func:`relationships`' rule: ``{"material", "lost", "lost_by_draw",
    "rows", "draws"}`` (``lost``: the mean over draws), or None without a material relationship or
    resample values.

    >>> pair = {"x": "a", "y": "b", "corr_original": 0.3, "corr_synthetic": [0.3], "corr_resample": [0.31, 0.1, 0.28]}
    >>> relationship_floor({"numeric": {"pairs": [pair], "resample": {"rows": 50, "draws": 3}}})["lost"]
    0.3333333333333333
    """
    material = _relationship_material(part)
    lost = _resample_lost(material)
    if not material or lost is None:
        return None
    sizes = [_num(_mapping(_mapping(part.get(k)).get("resample")).get("rows")) for k in ("indicators", "numeric")]
    rows = max((x for x in sizes if not math.isnan(x)), default=math.nan)
    return {
        "material": len(material),
        "lost": float(np.mean(lost)),
        "lost_by_draw": lost,
        "rows": None if math.isnan(rows) else int(rows),
        "draws": len(lost),
    }


def _relationship_material(part: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The material indicator slopes and numeric correlations of a relationships section."""
    ind = [p for p in _mapping(part.get("indicators")).get("pairs") or [] if isinstance(p, Mapping)]
    num = [p for p in _mapping(part.get("numeric")).get("pairs") or [] if isinstance(p, Mapping)]
    return _material(ind, "slope") + _material(num, "corr")  # numeric pairs carry correlations only


def _relationship_verdict(material: list[dict[str, Any]], what: str, rows: Any = None) -> Verdict | None:
    """The verdict on ``material`` pairs (:func:`_material`): against the sampling floor (what
    resamples of the original lose by the same rule) where every pair has it, else by
    :data:`LOST_SHARE_FLAG`; a reversed relationship is never good, and one a resample keeps is poor."""
    if not material:
        return None
    count = len(material)
    lost = [m for m in material if m["lost"]]
    reversed_ = [m for m in lost if m["reversed"]]
    floor_draws = _resample_lost(material)
    rule = (
        f"(a relationship with |r| ≥ {MATERIAL_CORRELATION} in the original counts as lost when its synthetic slope is under "
        f"{SLOPE_KEPT:g}× or over {1 / SLOPE_KEPT:g}× the original's, or of the other sign)"
    )
    one = what.replace("relationships", "relationship", 1)
    if not lost:
        head = f"The one material {one} is kept" if count == 1 else f"None of the {count} material {what} is lost"
    else:
        head = f"{len(lost)} of the {count} material {what} {'is' if len(lost) == 1 else 'are'} lost"
    named = f"; lost: {_every([m['found'] for m in lost])}" if lost else ""
    if floor_draws is None:  # an evaluation without the resamples: the share of the relationships lost
        share = len(lost) / count
        if not lost:
            return Verdict("good", f"{head} {rule}.")
        level = "poor" if share > LOST_SHARE_FLAG else "caution"
        bound = f"> {LOST_SHARE_FLAG:.0%}" if level == "poor" else f"≤ {LOST_SHARE_FLAG:.0%}"
        return Verdict(level, f"{head} ({share:.0%} {bound}) {rule}{named}.")
    floor = float(np.mean(floor_draws))
    size = f" of {_g(_num(rows))} rows" if not math.isnan(_num(rows)) else " as large as a set"
    numbers = (
        f"{head} {rule}{named}; a resample of the original{size} loses {_g(floor, 2)} of "
        f"{'it' if count == 1 else 'them'} on average, and columns drawn independently (no joint structure) would lose "
        f"{'it' if count == 1 else f'all {count}'}"
    )
    kept_by_sampling = [m for m in reversed_ if sum(m["resample_lost"]) * 2 < len(m["resample_lost"])]
    reasons = []
    if kept_by_sampling:
        names = _every([(m["found"][0], "", m["found"][1]) for m in kept_by_sampling]).replace("; ", ", ")
        reasons.append(
            f"{names} {'is' if len(kept_by_sampling) == 1 else 'are'} reversed, though a resample of the original keeps "
            f"{'its' if len(kept_by_sampling) == 1 else 'their'} sign — a reading of the release would get the direction wrong"
        )
    elif len(lost) <= NEAR_FLOOR * floor and not reversed_:
        why = f"within {NEAR_FLOOR:g} times what sampling alone loses" if lost else "kept as well as in a sample of the original"
        return Verdict("good", f"{numbers}: {why}.")
    if len(lost) >= count:
        reasons.append("every one lost, as by columns that keep no relationship")
    elif (len(lost) - floor) / count > LOST_SHARE_FLAG:
        reasons.append(f"{(len(lost) - floor) / count:.0%} of them lost beyond what sampling loses (> {LOST_SHARE_FLAG:.0%})")
    if reasons:
        return Verdict("poor", f"{numbers}: {'; '.join(reasons)}.")
    reason = (
        "a relationship reversed (weak enough that resamples lose it too)"
        if reversed_ and len(lost) <= NEAR_FLOOR * floor
        else f"more than {NEAR_FLOOR:g} times what sampling loses, up to {LOST_SHARE_FLAG:.0%} of them beyond it"
    )
    return Verdict("caution", f"{numbers}: {reason}.")


def relationships(part: Mapping[str, Any]) -> Verdict | None:
    """The material indicator slopes and numeric correlations halved, doubled or reversed,
    against the sampling floor (:func:`relationship_floor`) and the no-structure baseline (which
    loses them all): good when no more are lost than :data:`NEAR_FLOOR` times what a resample of
    the original loses and none is reversed; poor when a relationship the resample keeps is
    reversed, every one is lost, or more than :data:`LOST_SHARE_FLAG` of them beyond the floor;
    caution between. Every lost relationship is named."""
    floor = _mapping(part.get("floor"))
    rows = floor.get("rows")
    if rows is None:
        sizes = [_num(_mapping(_mapping(part.get(k)).get("resample")).get("rows")) for k in ("indicators", "numeric")]
        rows = max((x for x in sizes if not math.isnan(x)), default=None)
    return _relationship_verdict(_relationship_material(part), "relationships between columns", rows)


def sensitive(part: Mapping[str, Any]) -> Verdict | None:
    """The sensitive columns' indicator slopes (as :func:`relationships`) and their tables' TVD."""
    pairs = [p for p in _mapping(part.get("indicators")).get("pairs") or [] if isinstance(p, Mapping)]
    verdict = _relationship_verdict(_material(pairs, "slope"), "relationships of a sensitive category with another column's")
    tvd = _mean(list(_mapping(part.get("tvd_mean")).values()))
    if math.isnan(tvd):
        return verdict
    table = f"sensitive × public tables: mean TVD {_g(tvd)}"
    y = _mapping(part.get("yardsticks"))
    floor, apart = _mean(list(_mapping(y.get("floor")).values())), _mean(list(_mapping(y.get("independent")).values()))
    if not (math.isnan(floor) or math.isnan(apart)):
        extra, level = _sensitive_tables(table, tvd, floor, apart, y.get("rows"))
    elif tvd > MARGINAL_TVD_FLAG:
        extra, level = f"{table} > {MARGINAL_TVD_FLAG}", "poor"
    elif tvd > MARGINAL_TVD_OK:
        extra, level = f"{table} > {MARGINAL_TVD_OK}", "caution"
    else:
        extra, level = f"{table} ≤ {MARGINAL_TVD_OK}", "good"
    if verdict is None:
        return Verdict(level, extra[0].upper() + extra[1:] + ".")
    worse = max(LEVELS.index(level), LEVELS.index(verdict.level))
    return Verdict(LEVELS[worse], f"{verdict.text[:-1]}; {extra}.")


def _sensitive_tables(table: str, tvd: float, floor: float, apart: float, rows: Any) -> tuple[str, str]:
    """The sensitive tables' mean TVD against a resample's (the floor) and the original's own tables
    with the sensitive columns independent of the rest (``apart``), as :func:`_against_yardsticks`
    judges the two-way marginals: good near the floor and closer than independence (or where
    independence is itself near the floor), poor when no closer than independence, caution between.

    >>> _sensitive_tables("t", 0.03, 0.02, 0.2, 1000)[1], _sensitive_tables("t", 0.25, 0.02, 0.2, 1000)[1]
    ('good', 'poor')
    """
    numbers = (
        f"{table}, against {_g(floor)} for a resample of the original of {_g(_num(rows))} rows and {_g(apart)} "
        "with the sensitive columns independent of the rest"
    )
    structure = apart > NEAR_FLOOR * floor
    if tvd <= NEAR_FLOOR * floor and (tvd < apart or not structure):
        return f"{numbers}: near what sampling alone costs", "good"
    if tvd < apart:
        return f"{numbers}: {tvd / floor:.1f} times sampling's distance (near is within {NEAR_FLOOR:g} times)", "caution"
    return f"{numbers}: no closer than sensitive columns drawn apart from the public ones", "poor"


def single_set(rule: Any, sets: Any = None) -> bool:
    """Whether intervals come from one set alone (rule ``single``, or a release of one set), and so
    ignore the variance of synthesis and of the noise."""
    return str(rule or "") == "single" or (isinstance(sets, int) and not isinstance(sets, bool) and sets == 1)


#: The caveat every one-set interval carries, wherever it is shown.
SINGLE_SET_CAVEAT = (
    "The synthetic intervals come from one synthetic set, treated as if it were the data: they ignore "
    "the variance of synthesis and of the privacy noise, so they are too narrow."
)


def inference(part: Mapping[str, Any], sets: Any = None) -> Verdict | None:
    """Coefficients outside the original's 95 % interval, and slopes halved, doubled or reversed,
    in every model compared (``part["models"]``; a part without it is one model).

    A slope (any term but the intercept) that is significant in the original (|estimate / SE| ≥
    :data:`STD_DIFF_FLAG`) and halved, doubled or reversed in the synthetic data makes the
    verdict poor; an estimate more than :data:`STD_DIFF_FLAG` original standard errors away, a
    term the synthetic sets cannot estimate, or a model that could not be compared, caution.
    Every such term is named, with its model when there are several. ``sets``, the release's
    number of sets, marks one-set intervals when the rule does not.

    >>> row = lambda t, e, se, s: {"term": t, "original": {"estimate": e, "se": se}, "synthetic": {"estimate": s},
    ...     "std_diff": (s - e) / se}
    >>> part = {"source": "default", "models": [
    ...     {"formula": "y ~ x", "model": "ols", "coefficients": [row("x", 2.0, 0.5, -1.0)]},
    ...     {"formula": "z ~ x", "model": "ols", "coefficients": [row("x", 1.0, 0.5, 1.1)]}]}
    >>> v = inference(part)
    >>> v.level, v.text[:70]
    ('poor', 'Of 2 models (default, chosen from the domain), 1 poor and 1 good. y ~ ')
    """
    models = [m for m in part.get("models") or [] if isinstance(m, Mapping)]
    if not models:
        return _one_model(part, sets)
    source = str(part.get("source") or "")
    one = f" {SINGLE_SET_CAVEAT}" if any(single_set(m.get("rule"), sets) for m in models if m.get("coefficients")) else ""
    if len(models) == 1 and not models[0].get("error"):
        verdict = _one_model(models[0], sets)
        if verdict is None or source in ("", "given"):
            return verdict
        return Verdict(verdict.level, f"Model {models[0].get('formula')} ({SOURCE_WORDS.get(source, source)}): {verdict.text}")
    found = []  # (level, formula, text)
    for m in models:
        name = f"{m.get('formula')} ({m.get('model')})"
        if m.get("error"):
            found.append(("caution", name, f"not compared: {m.get('error')}"))
            continue
        coefs = [c for c in m.get("coefficients") or [] if isinstance(c, Mapping)]
        if not coefs:
            continue
        halved, far, absent = _findings(coefs)
        parts = []
        if halved:
            parts.append(f"significant slope(s) halved, doubled or reversed: {_every(halved, len(halved))}")
        lost = {t for _, t, _ in halved}
        others = [x for x in far if x[1] not in lost]
        if others:
            parts.append(f"more than {STD_DIFF_FLAG} original SEs away: {_every(others, len(others))}")
        if absent:
            parts.append(f"not estimable from the synthetic sets: {_every(absent, len(absent))}")
        level = "poor" if halved else "caution" if parts else "good"
        found.append((level, name, "; ".join(parts) if parts else f"every coefficient within {STD_DIFF_FLAG} original SEs"))
    if not found:
        return None
    worst = max(LEVELS.index(level) for level, _, _ in found)
    counts = [f"{n} {level}" for level in reversed(LEVELS) if (n := sum(1 for x in found if x[0] == level))]
    where = SOURCE_WORDS.get(source, source)
    head = f"Of {len(found)} models{f' ({where})' if where else ''}, {' and '.join(counts)}."
    rule = (
        f"(a slope significant in the original is lost under {SLOPE_KEPT:g}× or over {1 / SLOPE_KEPT:g}× the original, "
        f"or of the other sign; an estimate is flagged more than {STD_DIFF_FLAG} original SEs away)"
    )
    body = " ".join(f"{name}: {text}." for _, name, text in found)
    return Verdict(LEVELS[worst], f"{head} {body} {rule}.{one}")


#: Where the models came from, in a verdict's words (the JSON's ``source``).
SOURCE_WORDS = {
    "given": "the formula given",
    "declared": "declared in the domain",
    "default": "default, chosen from the domain",
}


def _findings(
    coefs: Sequence[Mapping[str, Any]],
) -> tuple[list[tuple[float, str, str]], list[tuple[float, str, str]], list[tuple[float, str, str]]]:
    """A model's flagged terms: significant slopes halved, doubled or reversed; estimates more than
    :data:`STD_DIFF_FLAG` original SEs away; terms the original estimates and the sets do not."""
    halved, far, absent = [], [], []  # (how far, term, text)
    for c in coefs:
        term = str(c.get("term", ""))
        o, s = _mapping(c.get("original")), _mapping(c.get("synthetic"))
        est, se, syn = _num(o.get("estimate")), _num(o.get("se")), _num(s.get("estimate"))
        d = _num(c.get("std_diff"))
        if math.isnan(syn) and not math.isnan(est):
            absent.append((abs(est / se) if se > 0 else 0.0, term, term))
            continue
        if abs(d) > STD_DIFF_FLAG:
            far.append((abs(d), term, f"{term} ({_g(est)} → {_g(syn)}, {_g(d)} SE)"))
        if term != "Intercept" and se > 0 and abs(est / se) >= STD_DIFF_FLAG and _lost(est, syn):
            halved.append((abs(syn - est) / abs(est), term, f"{term} {_g(est)} → {_g(syn)}"))
    return halved, far, absent


def _one_model(part: Mapping[str, Any], sets: Any = None) -> Verdict | None:
    """The verdict of one model's coefficients (see :func:`inference`)."""
    coefs = [c for c in part.get("coefficients") or [] if isinstance(c, Mapping)]
    if not coefs:
        return None
    halved, far, absent = _findings(coefs)
    one = f" {SINGLE_SET_CAVEAT}" if single_set(part.get("rule"), sets) else ""
    rule = f"(flagged when the synthetic estimate lies more than {STD_DIFF_FLAG} original SEs away, outside the original's 95 % interval)"
    missing = f" Not estimable from the synthetic sets: {_every(absent, len(absent))}." if absent else ""
    if halved:
        lost = {t for _, t, _ in halved}
        others = [x for x in far if x[1] not in lost]
        also = f" Also more than {STD_DIFF_FLAG} original SEs away: {_every(others, len(others))}." if others else ""
        return Verdict(
            "poor",
            f"{len(halved)} slope{'s' if len(halved) > 1 else ''} significant in the original "
            f"{'are' if len(halved) > 1 else 'is'} halved, doubled or reversed in the synthetic data: {_every(halved, len(halved))} "
            f"(under {SLOPE_KEPT:g}× or over {1 / SLOPE_KEPT:g}× the original, or of the other sign).{also}{missing}{one}",
        )
    if far:
        return Verdict(
            "caution",
            f"{len(far)} of {len(coefs)} coefficients move more than {STD_DIFF_FLAG} original SEs: {_every(far, len(far))} {rule}.{missing}{one}",
        )
    if absent:
        return Verdict("caution", f"{len(absent)} of {len(coefs)} coefficients{missing[1:].replace('Not', ' not', 1)}{one}")
    return Verdict("good", f"Every coefficient within {STD_DIFF_FLAG} original SEs of the original's {rule}.{one}")


def _every(found: list[tuple[float, str, str]], most: int = 8) -> str:
    """Every flagged term's text, the farthest first (past ``most``, how many more).

    >>> _every([(1.0, "a", "a 1 → 0"), (3.0, "b", "b 2 → -2")])
    'b 2 → -2; a 1 → 0'
    """
    ranked = [text for _, _, text in sorted(found, key=lambda t: -t[0])]
    more = f"; and {len(ranked) - most} more" if len(ranked) > most else ""
    return "; ".join(ranked[:most]) + more


SECTIONS: dict[str, Callable[[Mapping[str, Any]], Verdict | None]] = {
    "marginals": marginals,
    "numeric": numeric,
    "propensity": propensity,
    "relationships": relationships,
    "sensitive": sensitive,
    "inference": inference,
}


def verdicts(evaluation: Mapping[str, Any]) -> dict[str, Verdict]:
    """The verdict of every section of ``evaluation`` that has one (see the functions above)."""
    out = {}
    sets = _mapping(evaluation.get("dataset")).get("sets")
    for key, judge in SECTIONS.items():
        part = _mapping(evaluation.get(key))
        verdict = (inference(part, sets) if key == "inference" else judge(part)) if part else None
        if verdict is not None:
            out[key] = verdict
    return out


__all__ = [
    "Verdict",
    "verdicts",
    "marginals",
    "numeric",
    "propensity",
    "relationships",
    "relationship_floor",
    "sensitive",
    "inference",
    "single_set",
    "SINGLE_SET_CAVEAT",
]
