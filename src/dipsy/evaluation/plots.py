"""Figures of the evaluation report, each returned as a PNG ``data:`` URI.

Every figure is drawn on a bare :class:`matplotlib.figure.Figure` (Agg canvas), never through
``pyplot``: no global figure registry, no backend switch in the caller's process, nothing left
open. Each function returns ``None`` when it has nothing to draw, so the report can say so.

Colours follow the Okabe-Ito palette (distinguishable with the common colour-vision
deficiencies); the original data are always drawn in near-black.

>>> uri = kmarginal_plot({"score": 900.0, "per_set": [890.0, 910.0], "baselines": {"10%": 950.0}})
>>> uri.startswith("data:image/png;base64,")
True
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeGuard

import matplotlib
import matplotlib.ticker as ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from ..domain import Column, Domain, encode_column

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

ORIGINAL = "#222222"
SETS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
MAX_LEVELS = 16  # cells per heat-map axis of a categorical column; more would be unreadable at A4 width
#: Cells per heat-map axis of an ordered column (integer, binned, ordinal) shown one code each. Its
#: codes read in order, so narrow cells stay legible; past this, codes are grouped into runs of
#: equal length (never some merged and some not, which would make unequal cells look alike).
MAX_ORDERED_LEVELS = 32
_NICE = (1, 2, 5)
MAX_TERMS = 24  # panels in the coefficient plot; the table lists every term
DPI = 96
WIDTH = 8.0  # inches: 768 px, scaled to the page width in print

_STYLE: dict[RcKeyType, Any] = {
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "legend.fontsize": 7.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "svg.fonttype": "none",
}


# -- plumbing ------------------------------------------------------------------------------------


@contextmanager
def _style() -> Iterator[None]:
    """Report style for the figures drawn inside, without touching the caller's rcParams after."""
    with matplotlib.rc_context(_STYLE):
        yield


def set_colour(k: int) -> str:
    """Colour of synthetic set ``k`` (0-based)."""
    return SETS[k % len(SETS)]


def to_data_uri(fig: Figure) -> str:
    """The figure as a base64 PNG ``data:`` URI (the figure is drawn once and can be dropped).

    A figure with constrained layout already fits its labels inside itself; cropping it to a tight
    bounding box would draw it twice (about 12 % of a report's time)."""
    buf = io.BytesIO()
    fitted = isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches=None if fitted else "tight", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def finite(values: Any) -> np.ndarray:
    """Values as floats with None, NaN and infinities removed."""
    if values is None:
        return np.array([], dtype=float)
    arr = pd.to_numeric(pd.Series(list(np.atleast_1d(values)), dtype=object), errors="coerce").to_numpy(float)
    return arr[np.isfinite(arr)]


def nanmean(values: Any) -> float:
    """Mean of the finite values; NaN when there are none."""
    v = finite(values)
    return float(v.mean()) if v.size else math.nan


def short_number(x: float) -> str:
    """A compact axis label: 2500 -> '2.5k', 1000000 -> '1M'."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return f"{x / size:.4g}{suffix}"
    return f"{x:.4g}"


# -- codes and labels for heat maps ---------------------------------------------------------------


def column_codes(values: pd.Series, column: Column, n_bins: int = 10) -> tuple[np.ndarray, list[str]]:
    """Codes of a column (``-1`` where a value is outside the domain) and the label of each code.

    Categories carry the domain's labels; binned columns their bin ranges; a numeric column
    without bins is cut into ``n_bins`` equal widths over its public bounds.
    """
    wide_integer = column.kind == "integer" and column.bins is None and (column.size or 0) > 64 * MAX_LEVELS
    if (column.kind == "numeric" and column.bins is None) or wide_integer:
        # Cut before labelling: one label per value of a wide integer range would not fit in memory.
        lower, upper = _bounds(column)
        edges = np.linspace(float(lower), float(upper), (MAX_LEVELS if wide_integer else n_bins) + 1)
        column = Column(
            column.name, column.kind, lower=column.lower, upper=column.upper, bins=tuple(edges), missing=column.missing
        )
    codes = encode_column(values.reset_index(drop=True), column).codes
    return codes, code_labels(column)


def _bounds(column: Column) -> tuple[float, float]:
    """A numeric or integer column's public bounds, as declared (the domain requires both)."""
    assert column.lower is not None and column.upper is not None, "Column checks every non-categorical column's bounds"
    return column.lower, column.upper


def code_labels(column: Column) -> list[str]:
    """Human-readable label of each code of an encodable column (a missing state: its label)."""
    states = [f"missing: {label}" for label in column.missing.labels] if column.missing is not None else []
    return _value_labels(column) + states


def _value_labels(column: Column) -> list[str]:
    if column.is_categorical:
        return list(column.labels) if column.labels is not None else list(column.category_texts)
    lower, upper = _bounds(column)
    if column.bins is None:  # integer, one code per value
        return [str(v) for v in range(int(lower), int(upper) + 1)]
    if column.kind == "integer":
        low, high = column.integer_bin_ranges()
        # Wide ranges (a cut of a 10^9-value column) read better short; exact integers otherwise.
        text = short_number if max(abs(float(lower)), abs(float(upper))) >= 100_000 else str
        return [text(int(a)) if a == b else f"{text(int(a))}–{text(int(b))}" for a, b in zip(low, high)]
    edges = column.bins
    return [f"{short_number(a)}–{short_number(b)}" for a, b in zip(edges[:-1], edges[1:])]


def cap_levels(
    codes: Sequence[np.ndarray], labels: list[str], column: Column, reference: np.ndarray
) -> tuple[list[np.ndarray], list[str]]:
    """Group codes so that a heat map's axis stays readable.

    Categorical columns with more than :data:`MAX_LEVELS` categories keep the most frequent
    categories of ``reference`` (the original data) and pool the rest as "other". Ordered kinds
    keep every code up to :data:`MAX_ORDERED_LEVELS`; past that, codes are grouped into runs of
    one length, the least 1-2-5 number that leaves fewer runs than that, aligned on its multiples
    (of the value, for an integer column with one code per value): each cell spans as many
    values or bins as the next (the first and last may be cut short by the bounds), and its
    label gives the whole range.

    >>> col = Column("n", "integer", lower=17, upper=90)
    >>> _, labels = cap_levels([np.arange(74)], code_labels(col), col, np.arange(74))
    >>> labels[:3], labels[-1], len(labels)
    (['17–19', '20–24', '25–29'], '90', 16)
    """
    size = len(labels)
    if column.kind == "categorical":
        if size <= MAX_LEVELS:
            return list(codes), labels
        counts = np.bincount(reference[reference >= 0], minlength=size)
        keep = np.argsort(-counts, kind="stable")[: MAX_LEVELS - 1]
        mapping = np.full(size, MAX_LEVELS - 1)
        mapping[keep] = np.arange(keep.size)
        new_labels = [labels[k] for k in keep] + ["other"]
    else:
        if size <= MAX_ORDERED_LEVELS:
            return list(codes), labels
        values = size - column.n_states  # runs of values; each missing state stays a level of its own, after them
        run = _nice_run(values)
        # An integer column with one code per value groups by value (0–9, 10–19), else by code.
        start = int(_bounds(column)[0]) if column.kind == "integer" and column.bins is None else 0
        group = (np.arange(values) + start) // run
        mapping = group - group[0]
        groups = int(mapping[-1]) + 1
        new_labels = [_run_label(labels, np.flatnonzero(mapping == g), column.kind != "ordinal") for g in range(groups)]
        mapping = np.concatenate([mapping, groups + np.arange(column.n_states)])
        new_labels += labels[values:]
    return [np.where(c >= 0, mapping[np.clip(c, 0, None)], -1) for c in codes], new_labels


def _nice_run(size: int) -> int:
    """The least run length 1, 2, 5, 10, 20, 50, ... that leaves at most MAX_ORDERED_LEVELS - 1
    runs (one spare, since runs aligned on multiples can cut the first one short)."""
    scale = 1
    while True:
        for step in _NICE:
            if math.ceil(size / (step * scale)) <= MAX_ORDERED_LEVELS - 1:
                return step * scale
        scale *= 10


def _run_label(labels: list[str], members: np.ndarray, ranges: bool = True) -> str:
    """The label of a run of codes: from the first one's start to the last one's end.

    Integer and bin labels are ranges ("5–9"), so their ends are read off them; an ordinal
    category's label is taken whole.
    """
    first, last = labels[members[0]], labels[members[-1]]
    if members.size == 1:
        return first
    start, end = (first.split("–")[0], last.split("–")[-1]) if ranges else (first, last)
    return start if start == end else f"{start}–{end}"


def crosstab(a: np.ndarray, b: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Proportions of a two-way table of codes (rows with a code of -1 are left out)."""
    ok = (a >= 0) & (b >= 0)
    counts = np.bincount(a[ok] * shape[1] + b[ok], minlength=shape[0] * shape[1]).reshape(shape)
    total = counts.sum()
    return counts / total if total else counts.astype(float)


# -- marginals ------------------------------------------------------------------------------------


def tvd_bars(one_way: Mapping[str, Any]) -> str | None:
    """Bar chart of the 1-way TVD of each column: mean over the sets, one dot per set."""
    rows = [(" × ".join(map(str, m.get("columns", []))), finite(m.get("tvd"))) for m in one_way.get("marginals") or []]
    rows = sorted((r for r in rows if r[1].size), key=lambda r: -r[1].mean())
    if not rows:
        return None
    with _style():
        fig = Figure(figsize=(WIDTH, 0.8 + 0.28 * len(rows)))
        ax = fig.subplots()
        y = np.arange(len(rows))
        ax.barh(y, [r[1].mean() for r in rows], color="#9DB9D3", label="mean over sets")
        for k in range(max(r[1].size for r in rows)):
            pts = [(i, r[1][k]) for i, r in enumerate(rows) if k < r[1].size]
            ax.plot([p[1] for p in pts], [p[0] for p in pts], "o", ms=3.5, color=set_colour(k), label=f"set {k + 1}")
        ax.set_yticks(y, [r[0] for r in rows])
        ax.invert_yaxis()
        ax.set_xlabel("total variation distance (0 = identical proportions; lower is better)")
        ax.set_xlim(0, max(0.05, 1.15 * max(r[1].max() for r in rows)))
        _legend_above(ax)
        return to_data_uri(fig)


def marginal_heatmaps(
    original: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str], domain: Domain, tvd: float | None = None
) -> str | None:
    """Heat maps of a two-way marginal: original, synthetic set 1, and their difference."""
    if len(columns) != 2 or any(c not in domain or c not in original or c not in synthetic for c in columns):
        return None
    cols = [domain[c] for c in columns]
    axes_codes, axes_labels = [], []
    for col in cols:
        (orig, syn), labels = _codes_pair(original[col.name], synthetic[col.name], col)
        axes_codes.append((orig, syn))
        axes_labels.append(labels)
    shape = (len(axes_labels[0]), len(axes_labels[1]))
    p_orig = crosstab(axes_codes[0][0], axes_codes[1][0], shape)
    p_syn = crosstab(axes_codes[0][1], axes_codes[1][1], shape)
    with _style():
        return _draw_heatmaps(p_orig, p_syn, axes_labels, columns, tvd)


def _codes_pair(orig: pd.Series, syn: pd.Series, column: Column) -> tuple[list[np.ndarray], list[str]]:
    codes_o, labels = column_codes(orig, column)
    codes_s, _ = column_codes(syn, column)
    return cap_levels([codes_o, codes_s], labels, column, codes_o)


def _tick(label: str, width: int = 22) -> str:
    """A tick label short enough to leave the heatmaps room (long category labels are cut)."""
    return label if len(label) <= width else label[: width - 1] + "…"


def _draw_heatmaps(
    p_orig: np.ndarray, p_syn: np.ndarray, labels: list[list[str]], columns: Sequence[str], tvd: float | None
) -> str:
    rows, cols = p_orig.shape
    labels = [[_tick(x) for x in axis] for axis in labels]
    fig = Figure(figsize=(WIDTH + 1.5, max(2.6, min(8.5, 1.9 + 0.22 * rows))), layout="constrained")
    axes = fig.subplots(1, 3, sharey=True)
    vmax = max(p_orig.max(), p_syn.max(), 1e-12)
    diff = p_syn - p_orig
    dmax = max(np.abs(diff).max(), 0.01)  # identical tables: a readable ±1% scale, not ±1e-12
    panels = (
        (p_orig, "original", "Greys", 0, vmax),
        (p_syn, "synthetic set 1", "Greys", 0, vmax),
        (diff, "synthetic − original", "RdBu_r", -dmax, dmax),
    )
    images = []
    for ax, (values, title, cmap, lo, hi) in zip(axes, panels):
        images.append(ax.imshow(values, cmap=cmap, vmin=lo, vmax=hi, aspect="auto", interpolation="nearest"))
        ax.set_title(title)
        # Past MAX_LEVELS columns (an ordered axis) every k-th label, so the labels do not overlap.
        step = math.ceil(cols / MAX_LEVELS)
        ax.set_xticks(
            range(0, cols, step), labels[1][::step], rotation=60 if cols > 4 else 0, ha="right" if cols > 4 else "center"
        )
        ax.set_xlabel(str(columns[1]))
        if cols <= 6 and rows * cols <= 36:  # more cells leave no room for readable numbers
            _annotate(ax, values, hi, signed=lo < 0)
    # One scale for both share panels, so equal shades mean equal shares.
    fig.colorbar(
        images[1], ax=list(axes[:2]), shrink=0.85, format=ticker.PercentFormatter(1.0, decimals=0), label="share of rows"
    )
    # decimals=None: as many as the ticks need (a fixed one printed 0.25% as "0.3%").
    fig.colorbar(images[2], ax=axes[2], shrink=0.85, format=ticker.PercentFormatter(1.0, decimals=None), label="difference")
    step = math.ceil(rows / MAX_ORDERED_LEVELS)  # cap_levels keeps rows <= MAX_ORDERED_LEVELS: every label fits
    axes[0].set_yticks(range(0, rows, step), labels[0][::step])
    axes[0].set_ylabel(str(columns[0]))
    if tvd is not None and math.isfinite(tvd):
        fig.suptitle(f"{columns[0]} × {columns[1]}   (TVD, mean over sets: {tvd:.3f})", fontsize=9.5)
    return to_data_uri(fig)


def _annotate(ax: Any, values: np.ndarray, top: float, signed: bool) -> None:
    for (i, j), v in np.ndenumerate(values):
        dark = abs(v) > 0.6 * top
        ax.text(
            j, i, f"{v:+.1%}" if signed else f"{v:.1%}", ha="center", va="center", fontsize=7, color="white" if dark else "black"
        )


def subsample_baselines(score: Mapping[str, Any]) -> list[tuple[str, float, Any]]:
    """The subsample baselines of a k-marginal score as ``(label, score, rows)``, lowest score first.

    Accepts ``{"10%": score}`` or ``[{"fraction": 0.1, "rows": 99, "score": score}]``; entries
    without a finite score are left out.

    >>> subsample_baselines({"baselines": [{"fraction": 0.1, "rows": 99, "score": 850.0}, {"fraction": 0.5, "score": None}]})
    [('10%', 850.0, 99)]
    """
    raw = score.get("baselines")
    items: list[tuple[str, Any, Any]] = []
    if isinstance(raw, Mapping):
        items = [(str(k), v, None) for k, v in raw.items()]
    elif isinstance(raw, (list, tuple)):
        for b in raw:
            if isinstance(b, Mapping):
                frac = b.get("fraction")
                label = f"{100 * float(frac):.4g}%" if _number(frac) else str(b.get("label", "?"))
                items.append((label, b.get("score"), b.get("rows")))
    out = [(label, nanmean([v]), rows) for label, v, rows in items]
    return sorted((b for b in out if math.isfinite(b[1])), key=lambda b: b[1])


def _number(x: Any) -> TypeGuard[int | float | np.integer | np.floating]:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and math.isfinite(float(x))


def kmarginal_plot(score: Mapping[str, Any]) -> str | None:
    """The k-marginal score of each set against the scores of random subsamples of the original."""
    per_set = finite(score.get("per_set"))
    mean = nanmean([score.get("score")])
    baselines = [(label, value) for label, value, _ in subsample_baselines(score)]
    if not per_set.size and not math.isfinite(mean) and not baselines:
        return None
    with _style():
        fig = Figure(figsize=(WIDTH, 2.0))
        ax = fig.subplots()
        for label, value in baselines:
            ax.axvline(value, color="#BBBBBB", lw=1, zorder=0)
            ax.annotate(
                f"{label} subsample",
                (value, 1.0),
                xycoords=("data", "axes fraction"),
                rotation=90,
                ha="right",
                va="top",
                fontsize=7,
                color="#555555",
            )
        for k, v in enumerate(per_set):
            ax.plot(v, 0.5, "o", ms=8, color=set_colour(k), label=f"set {k + 1}", zorder=3)
        if math.isfinite(mean):
            ax.axvline(mean, color=set_colour(0), lw=2, ls="--", label="synthetic (mean)", zorder=2)
        values = [v for _, v in baselines] + list(per_set) + ([mean] if math.isfinite(mean) else [])
        lo, hi = min(values), max(values)
        pad = max(5.0, 0.08 * (hi - lo))
        ax.set_xlim(max(0.0, lo - pad), min(1000.0, hi + pad) if hi <= 1000 else hi + pad)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        ax.set_xlabel("k-marginal score (1000 = identical marginals; higher is better)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return to_data_uri(fig)


def group_score_plot(by_group: Mapping[str, Any]) -> str | None:
    """Each group's k-marginal score (one dot per group and set), sorted, against the overall mean."""
    scores = [finite(s) for s in by_group.get("group_scores") or []]
    if not scores or not any(s.size for s in scores):
        return None
    with _style():
        fig = Figure(figsize=(WIDTH, 2.4))
        ax = fig.subplots()
        order = np.argsort(np.mean([s for s in scores if s.size], axis=0))
        for k, s in enumerate(scores):
            if s.size:
                ax.plot(np.arange(s.size), s[order], "o", ms=4, color=set_colour(k), label=f"set {k + 1}", alpha=0.8)
        mean = nanmean([by_group.get("score")])
        if math.isfinite(mean):
            ax.axhline(mean, color="#555555", lw=1, ls="--", label="mean over groups")
        ax.set_xlabel(f"groups of {', '.join(map(str, by_group.get('groups') or []))}, worst first")
        ax.set_ylabel(f"{by_group.get('k')}-way score")
        ax.set_xticks([])
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return to_data_uri(fig)


# -- numeric columns -----------------------------------------------------------------------------


def _values(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame:
        return np.array([], dtype=float)
    return finite(pd.to_numeric(frame[name], errors="coerce").to_numpy(float))


def histogram_edges(values: np.ndarray, column: Column | None) -> tuple[np.ndarray, list[str] | None]:
    """Bin edges for a numeric column, and tick labels when the bins are drawn as equal slots.

    The domain's bins are the resolution the synthesizer saw (inside a bin it draws uniformly),
    so they are used as they are, one equal-width slot each, however wide the public bin.
    """
    if column is not None and column.bins is not None:
        edges = np.asarray(column.bins, dtype=float)
        return edges, _value_labels(column)  # the bins only: a missing state has no place on the axis
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    if column is not None and not column.is_categorical:
        lower, upper = _bounds(column)
        lo, hi = max(lo, float(lower)), min(hi, float(upper))
    if hi <= lo:
        hi = lo + 1.0
    whole = column is not None and column.kind == "integer" or (values.size and np.all(values == np.round(values)))
    if whole and hi - lo <= 60:
        return np.arange(math.floor(lo) - 0.5, math.ceil(hi) + 1.0), None
    return np.linspace(lo, hi, 41), None


def numeric_histograms(
    original: pd.DataFrame, tables: Sequence[pd.DataFrame], name: str, column: Column | None = None
) -> str | None:
    """Overlaid histograms (proportions per bin) of the original and each synthetic set."""
    orig = _values(original, name)
    if not orig.size:
        return None
    edges, slots = histogram_edges(orig, column)
    with _style():
        fig = Figure(figsize=(WIDTH / 2, 2.6))
        ax = fig.subplots()
        x = np.arange(len(edges)) if slots is not None else edges
        share = lambda v: np.histogram(np.clip(v, edges[0], edges[-1]), edges)[0] / max(v.size, 1)
        ax.stairs(share(orig), x, fill=True, color=ORIGINAL, alpha=0.25, label="original")
        ax.stairs(share(orig), x, color=ORIGINAL, lw=1.2)
        for k, table in enumerate(tables):
            syn = _values(table, name)
            if syn.size:
                ax.stairs(share(syn), x, color=set_colour(k), lw=1.1, label=f"set {k + 1}")
        if slots is not None:
            step = max(1, len(slots) // 10)
            ax.set_xticks(np.arange(len(slots))[::step] + 0.5, slots[::step], rotation=45, ha="right")
        ax.set_xlabel(f"{name}" + (" (the domain's bins)" if slots is not None else ""))
        ax.set_ylabel("share of rows")
        _legend_above(ax)
        return to_data_uri(fig)


FLOOR = "#999999"


def numeric_ecdfs(
    original: pd.DataFrame, tables: Sequence[pd.DataFrame], name: str, floor: np.ndarray | None = None
) -> str | None:
    """Overlaid empirical CDFs; the axis is trimmed to the central 99% of the original values.

    ``floor``, if given, is the original redrawn inside its bins (the binning floor), drawn
    dotted in grey: the closest a synthesizer of those bins can come.
    """
    orig = _values(original, name)
    if not orig.size:
        return None
    with _style():
        fig = Figure(figsize=(WIDTH / 2, 2.6))
        ax = fig.subplots()
        _ecdf(ax, orig, ORIGINAL, "original", lw=1.6)
        for k, table in enumerate(tables):
            syn = _values(table, name)
            if syn.size:
                _ecdf(ax, syn, set_colour(k), f"set {k + 1}", lw=1.0)
        if floor is not None and finite(floor).size:
            _ecdf(ax, finite(floor), FLOOR, "binning floor", lw=1.2, style=":")
        lo, hi = np.quantile(orig, [0.005, 0.995])
        _ecdf_frame(ax, name, lo, hi, log=False)
        return to_data_uri(fig)


def release_ecdfs(original: np.ndarray, releases: Sequence[tuple[str, Sequence[np.ndarray]]], name: str) -> str | None:
    """The original's ECDF beside every release's sets, one colour per release.

    The first set of a release is drawn bold, its other sets thin, the original dashed on top.
    A right-skewed positive column (the central 99% of the original spanning a factor of more
    than 20) gets a log axis: on a linear one its body would be squeezed against the left edge.
    """
    if not original.size:
        return None
    lo, hi = np.quantile(original, [0.005, 0.995])
    log = lo > 0 and hi / lo > 20
    with _style():
        fig = Figure(figsize=(WIDTH, 3.4))
        ax = fig.subplots()
        for k, (label, sets) in enumerate(releases):
            for j, values in enumerate(sets):
                if values.size:
                    _ecdf(ax, values, set_colour(k), label if j == 0 else None, lw=1.3 if j == 0 else 0.6)
        _ecdf(ax, original, ORIGINAL, "original", lw=1.6, style="--")  # last, so no release hides it
        _ecdf_frame(ax, name, lo, hi, log)
        return to_data_uri(fig)


def _ecdf_frame(ax: Any, name: str, lo: float, hi: float, log: bool) -> None:
    """Axes of an ECDF plot: x over [lo, hi] (the original's central 99%), padded; labels; legend."""
    if log:
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.5, hi * 1.5)
    elif hi > lo:
        ax.set_xlim(lo - 0.03 * (hi - lo), hi + 0.03 * (hi - lo))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short_number(v)))
    ax.set_ylim(0, 1.01)
    ax.set_xlabel(f"{name} (central 99% of the original{', log scale' if log else ''})")
    ax.set_ylabel("share of rows ≤ x")
    _legend_above(ax)


def _legend_above(ax: Any) -> None:
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=4, frameon=False, handlelength=1.4, columnspacing=1.0)


def _ecdf(ax: Any, values: np.ndarray, colour: str, label: str | None, lw: float, style: str = "-") -> None:
    # Unique values with counts keep the drawn path short for large tables of whole numbers.
    x, counts = np.unique(values, return_counts=True)
    y = np.cumsum(counts) / values.size
    ax.step(np.r_[x[0], x], np.r_[0.0, y], where="post", color=colour, lw=lw, ls=style, label=label)


# -- relationships and inference -----------------------------------------------------------------


def relationship_scatter(
    pairs: Sequence[Mapping[str, Any]], kind: str = "indicator", r: Mapping[str, Sequence[float] | None] | None = None
) -> str | None:
    """Original (x) against synthetic (y) correlations and slopes of pairs, with the 45° line.

    ``r``, if given, maps ``"corr"`` and ``"slope"`` to a correlation per set shown in the
    panel's title (S-004 Figs. 3c, 3d).
    """
    panels = [(key, title) for key, title in (("corr", "correlation"), ("slope", "slope")) if _has(pairs, f"{key}_original")]
    if not panels:
        return None
    with _style():
        fig = Figure(figsize=(WIDTH * len(panels) / 2, 3.5), layout="constrained")
        axes = np.atleast_1d(fig.subplots(1, len(panels)))
        for ax, (key, title) in zip(axes, panels):
            _scatter_panel(ax, pairs, key, title, kind)
            shown = _r_text((r or {}).get(key))
            if shown:
                ax.set_title(f"{title}s of {kind} pairs  ({shown})")
        axes[0].legend(frameon=False, loc="upper left")
        return to_data_uri(fig)


def _r_text(r: Sequence[float] | None) -> str:
    finite_r = [v for v in finite_or_nan(r) if math.isfinite(v)]
    return f"r = {', '.join(f'{v:.3f}' for v in finite_r)}" if finite_r else ""


def _has(pairs: Sequence[Mapping[str, Any]], key: str) -> bool:
    return any(math.isfinite(nanmean([p.get(key)])) for p in pairs)


def _scatter_panel(ax: Any, pairs: Sequence[Mapping[str, Any]], key: str, title: str, kind: str) -> None:
    points: list[float] = []
    sets = max((len(finite_or_nan(p.get(f"{key}_synthetic"))) for p in pairs), default=0)
    for k in range(sets):
        xs, ys = [], []
        for p in pairs:
            syn = finite_or_nan(p.get(f"{key}_synthetic"))
            x, y = nanmean([p.get(f"{key}_original")]), syn[k] if k < syn.size else math.nan
            if math.isfinite(x) and math.isfinite(y):
                xs.append(x)
                ys.append(y)
        ax.plot(xs, ys, "o", ms=3.5, alpha=0.75, color=set_colour(k), label=f"set {k + 1}")
        points += xs + ys
    lo, hi = (min(points), max(points)) if points else (-1.0, 1.0)
    pad = 0.05 * max(hi - lo, 1e-9)
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="#888888", lw=1, zorder=0, label="45° line")
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_aspect("equal", adjustable="box")
    ax.xaxis.set_major_locator(ticker.MaxNLocator(5))
    ax.yaxis.set_major_locator(ticker.MaxNLocator(5))
    ax.set_xlabel(f"{title} in the original")
    ax.set_ylabel(f"{title} in the synthetic set")
    ax.set_title(f"{title}s of {kind} pairs")


def finite_or_nan(values: Any) -> np.ndarray:
    """Values as floats, None and text turned to NaN, positions kept."""
    if values is None:
        return np.array([], dtype=float)
    return pd.to_numeric(pd.Series(list(np.atleast_1d(values)), dtype=object), errors="coerce").to_numpy(float)


def coefficient_plot(coefficients: Sequence[Mapping[str, Any]]) -> str | None:
    """Per term, the original and the synthetic-data interval side by side (and the noise-aware one
    below them where the term has it), each term on its own scale.

    Terms differ in scale (an intercept beside a slope), so each term gets a small panel of its
    own rather than one shared axis.
    """
    terms = [c for c in coefficients if _interval(c.get("original")) or _interval(c.get("synthetic"))][:MAX_TERMS]
    if not terms:
        return None
    ncols = min(4, len(terms))
    nrows = math.ceil(len(terms) / ncols)
    with _style():
        tall = 1.3 if not any("noise_aware" in t for t in terms) else 1.7
        fig = Figure(figsize=(WIDTH, 0.4 + tall * nrows), layout="constrained")
        axes = np.atleast_1d(fig.subplots(nrows, ncols)).ravel()
        for ax, term in zip(axes, terms):
            _term_panel(ax, term)
        for ax in axes[len(terms) :]:
            ax.set_visible(False)
        return to_data_uri(fig)


def _interval(part: Any) -> tuple[float, float, float] | None:
    if not isinstance(part, Mapping):
        return None
    est, lo, hi = (nanmean([part.get(k)]) for k in ("estimate", "lower", "upper"))
    return (est, lo, hi) if math.isfinite(est) else None


#: The noise-aware interval's colour (a declared analysis's, from the release's published table).
NOISE_AWARE = "#2a9d5c"


def _term_panel(ax: Any, term: Mapping[str, Any]) -> None:
    rows = [("synthetic", set_colour(0)), ("original", ORIGINAL)]
    if "noise_aware" in term:  # a declared analysis: its interval from the published table, at the bottom
        rows.insert(0, ("noise_aware", NOISE_AWARE))
    for y, (key, colour) in enumerate(rows):
        iv = _interval(term.get(key))
        if iv is None:
            continue
        est, lo, hi = iv
        if math.isfinite(lo) and math.isfinite(hi):
            ax.plot([lo, hi], [y, y], color=colour, lw=2.2, solid_capstyle="butt")
        ax.plot(est, y, "o", ms=4.5, color=colour)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_yticks(range(len(rows)), [key.replace("_", "-") for key, _ in rows])
    ax.set_title(str(term.get("term", "")), fontsize=8)
    ax.tick_params(axis="x", labelsize=6.5)
    ax.xaxis.set_major_locator(ticker.MaxNLocator(3))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short_number(v)))


def agreement_scatter(
    original: Sequence[float],
    synthetic: Sequence[Sequence[float]],
    what: str,
    r: Sequence[float] | None = None,
    groups: Sequence[str] | None = None,
) -> str | None:
    """Original (x) against synthetic (y) values of one kind — the joint proportions of S-004 Fig. 3b —
    one colour per set, one marker per group (e.g. 2-way and 3-way cells), the y = x line, and
    the correlation per set in the title."""
    x = finite_or_nan(original)
    sets = [finite_or_nan(s) for s in synthetic if s is not None]
    if x.size == 0 or not sets:
        return None
    group = np.asarray(list(groups) if groups is not None and len(groups) == x.size else [""] * x.size, dtype=object)
    names = list(dict.fromkeys(group.tolist()))
    markers = "o^sDv"
    with _style():
        fig = Figure(figsize=(WIDTH / 2, 3.6), layout="constrained")
        ax = fig.subplots()
        points: list[float] = []
        for k, y in enumerate(sets):
            ok = np.isfinite(x) & np.isfinite(y[: x.size]) if y.size == x.size else np.zeros(x.size, bool)
            for g, name in enumerate(names):
                here = ok & (group == name)
                label = f"set {k + 1}" + (f", {name}" if len(names) > 1 else "")
                ax.plot(x[here], y[here], markers[g % len(markers)], ms=3, alpha=0.6, color=set_colour(k), label=label)
            points += list(x[ok]) + list(y[ok])
        if not points:
            return None
        lo, hi = min(points), max(points)
        pad = 0.05 * max(hi - lo, 1e-9)
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="#888888", lw=1, zorder=0, label="y = x")
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(lo - pad, hi + pad)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel(f"{what} in the original")
        ax.set_ylabel(f"{what} in the synthetic set")
        shown = _r_text(r)
        ax.set_title(what + (f"  ({shown})" if shown else ""), fontsize=9)
        ax.legend(frameon=False, loc="upper left", fontsize=7)
        return to_data_uri(fig)


def coefficient_forest(coefficients: Sequence[Mapping[str, Any]], title: str = "", max_terms: int = 48) -> str | None:
    """Coefficients of one model on one shared axis (S-004 Figs. 10–14): per term a row with the
    original estimate and 95% interval (black) and the synthetic one combined over the sets
    (blue) just under it; the vertical line at 0.

    Unlike :func:`coefficient_plot` the axis is shared: every coefficient of a logistic model
    with categorical predictors is a log odds ratio (or the intercept's log odds). A level with
    almost no records of the category (separation) gives an interval thousands wide that would
    squeeze every other one to a dot, so the axis covers the estimates and the intervals up to
    :data:`FOREST_WIDE` times the median width; wider ones run to the edge, ending in an arrow.
    """
    terms = [c for c in coefficients if _interval(c.get("original")) or _interval(c.get("synthetic"))][:max_terms]
    if not terms:
        return None
    limits = _forest_limits(terms)
    with _style():
        fig = Figure(figsize=(WIDTH, 0.9 + 0.24 * len(terms)), layout="constrained")
        ax = fig.subplots()
        for row, term in enumerate(terms):
            for shift, key, colour in ((-0.17, "original", ORIGINAL), (0.17, "synthetic", set_colour(0))):
                iv = _interval(term.get(key))
                if iv is None:
                    continue
                est, lo, hi = iv
                y = row + shift
                if math.isfinite(lo) and math.isfinite(hi):
                    ax.plot([lo, hi], [y, y], color=colour, lw=1.6, solid_capstyle="butt")
                ax.plot(est, y, "o", ms=3.5, color=colour, label=key if row == 0 else None)
                if limits is not None:
                    for end, edge, marker in ((lo, limits[0], "<"), (hi, limits[1], ">")):
                        if math.isfinite(end) and (end < edge if marker == "<" else end > edge):
                            ax.plot(edge, y, marker, ms=4, color=colour, clip_on=False)
        ax.axvline(0, color="#888888", lw=0.8, zorder=0)
        if limits is not None:
            ax.set_xlim(limits[0], limits[1])
        ax.set_yticks(range(len(terms)), [_tick(str(t.get("term", "")), 40) for t in terms], fontsize=7)
        ax.set_ylim(len(terms) - 0.5, -0.5)
        cut = " (arrows: intervals cut at the axis; the table gives them)" if limits is not None and limits[2] else ""
        ax.set_xlabel("coefficient (log odds ratio) with its 95% interval" + cut)
        if title:
            ax.set_title(title, fontsize=9)
        ax.legend(frameon=True, framealpha=0.85, loc="best", fontsize=7)
        return to_data_uri(fig)


#: In the coefficient forest, intervals wider than this many times the median width are cut at the axis.
FOREST_WIDE = 10


def _forest_limits(terms: Sequence[Mapping[str, Any]]) -> tuple[float, float, bool] | None:
    """x limits covering every estimate and every interval of ordinary width, and whether any
    interval is cut; None when no interval is much wider than the rest."""
    ivs = [iv for t in terms for key in ("original", "synthetic") if (iv := _interval(t.get(key))) is not None]
    widths = np.array([hi - lo for _, lo, hi in ivs if math.isfinite(lo) and math.isfinite(hi)])
    if widths.size == 0:
        return None
    typical = float(np.median(widths))
    ordinary = [
        (lo, hi) for _, lo, hi in ivs if math.isfinite(lo) and math.isfinite(hi) and hi - lo <= FOREST_WIDE * max(typical, 1e-12)
    ]
    if len(ordinary) == widths.size:
        return None
    points = [est for est, _, _ in ivs] + [x for pair in ordinary for x in pair] + [0.0]
    lo, hi = min(points), max(points)
    pad = 0.05 * max(hi - lo, 1e-9)
    return lo - pad, hi + pad, True
