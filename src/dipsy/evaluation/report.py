"""The HTML report of an evaluation: one self-contained file.

Every figure is a PNG inside the page as a ``data:`` URI and the style sheet is inline, so the
file opens offline, can be mailed or archived as it is, and prints on A4 (one section per page).
A banner under the header says the page holds statistics of the confidential data and is not
covered by the release's guarantee. The privacy statement comes first: a reader must know what was
guaranteed before judging how useful the data are; it ends with what the method chose (release.json's
``parameters``, rendered generically). Each section opens with a one-sentence verdict and its
threshold (:mod:`.verdicts`). All text from the evaluation, the release and the domain is escaped.

>>> import pandas as pd
>>> from dipsy.domain import Domain
>>> data = pd.DataFrame({"x": [0, 1, 1]})
>>> page = render({}, data, [data], Domain.from_sizes({"x": 2}))
>>> page.startswith("<!DOCTYPE html>") and "1. Privacy statement" in page
True
"""

from __future__ import annotations

import html
import math
import os
import re
import tempfile
from collections.abc import Container, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain
from . import plots
from . import verdicts as judge
from .missing import without_states
from .numeric import redraw_in_bins
from .plots import finite, nanmean
from .regressions import conclusion
from .verdicts import SINGLE_SET_CAVEAT, Verdict, single_set

SECTIONS = (
    ("privacy", "Privacy statement"),
    ("summary", "Summary"),
    ("marginals", "Marginals"),
    ("numeric", "Numeric columns"),
    ("propensity", "Propensity scores"),
    ("relationships", "Relationships"),
    ("sensitive", "Sensitive attributes"),
    ("inference", "Inference"),
)
WORST_HEATMAPS = 3
TOP_PAIRS = 10
#: The first thing under the header: the page holds the confidential data's statistics.
BANNER = (
    '<div class="banner" role="note"><strong>Confidential: not for publication.</strong> This report contains statistics '
    "of the confidential original data — its means, quantiles, cross-tabulations, correlations, regression coefficients "
    "and plots — set beside the synthetic sets. It is the data steward's evidence for deciding whether to publish the "
    "release; it is not covered by the release's privacy guarantee. Do not publish it, and share it only with those "
    "allowed to see the original data.</div>"
)
#: Words shown with each verdict level (the colour is never the only signal).
VERDICT_WORDS = {"good": "Looks good", "caution": "Caution", "poor": "Problem"}


def write_report(
    evaluation: Mapping[str, Any], original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain, path: str | Path
) -> Path:
    """Write the HTML report of an evaluation to ``path`` atomically.

    Parameters
    ----------
    evaluation
        The dictionary returned by :func:`dipsy.evaluation.evaluate`; missing or empty sections
        are reported as not applicable.
    original
        The original (confidential) table the evaluation compared against.
    tables
        The m synthetic sets of the release.
    domain
        The public domain of the released columns (labels, bins and bounds of the axes).
    path
        The HTML file to write; its folder is created if needed.

    Returns
    -------
    Path
        ``path``, once the complete file is in place (written to a temporary file beside it,
        then renamed, so a reader never sees half a report).
    """
    return write_atomic(Path(path), render(evaluation, original, tables, domain))


def render(evaluation: Mapping[str, Any], original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain) -> str:
    """The report as an HTML string (see :func:`write_report`)."""
    ev = evaluation or {}
    release = _mapping(ev.get("release"))
    privacy = _mapping(ev.get("privacy")) or _mapping(release.get("privacy"))
    found = judge.verdicts(ev)
    sets = _mapping(ev.get("dataset")).get("sets", release.get("sets"))
    builders = {
        "privacy": lambda: _privacy(privacy, release, _mapping(ev.get("dataset"))),
        "summary": lambda: _summary(ev, found, sets),
        "marginals": lambda: (
            _marginals(_mapping(ev.get("marginals")), original, tables, domain)
            + _missing(_mapping(ev.get("missing")))
            + _rules(_mapping(ev.get("rules")))
        ),
        # Plotted as the metrics read them: a declared missing state (−8, .a) is no number.
        "numeric": lambda: _numeric(
            _mapping(ev.get("numeric")), without_states(original, domain), [without_states(t, domain) for t in tables], domain
        ),
        "propensity": lambda: _propensity(_mapping(ev.get("propensity"))),
        "relationships": lambda: _relationships(_mapping(ev.get("relationships"))),
        "sensitive": lambda: _sensitive(_mapping(ev.get("sensitive")), sets),
        "inference": lambda: _inference(_mapping(ev.get("inference")), sets),
    }
    body = [
        _section(i, key, title, _verdict_box(found.get(key)) + builders[key]())
        for i, (key, title) in enumerate(SECTIONS, start=1)
    ]
    method = release.get("method", "unknown method")
    title = f"dipsy evaluation — {method} — release {str(release.get('release_id', ''))[:12]}"
    return html_page(title, _header(release) + BANNER, "".join(body))


# -- text helpers --------------------------------------------------------------------------------


class Html(str):
    """Text that is already HTML (built here from escaped parts), so :func:`esc` leaves it alone."""


def esc(value: Any) -> str:
    """HTML-escaped text of any value (an :class:`Html` value is passed through)."""
    return value if isinstance(value, Html) else html.escape(str(value), quote=True)


def value_cell(value: str, detail: str = "") -> Html:
    """A headline number with a smaller line of detail under it."""
    extra = f'<span class="detail">{esc(detail)}</span>' if detail else ""
    return Html(f'<span class="value">{esc(value)}</span>{extra}')


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table: '—' for missing or NaN, thousands separated, else ``digits`` significant."""
    if value is None:
        return "—"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, digits) for v in value) or "—"
    if isinstance(value, (bool, str)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(x):
        return "—"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{digits}g}"


def fmt_sets(values: Any) -> str:
    """Mean over the sets, with the per-set values after it when there are several."""
    v = plots.finite_or_nan(values)
    if v.size == 0:
        return "—"
    if v.size == 1:
        return fmt(v[0])
    return f"{fmt(nanmean(v))} (sets: {', '.join(fmt(x) for x in v)})"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _na(why: str) -> str:
    return f'<p class="na">Not applicable: {esc(why)}</p>'


def _p(text: str, cls: str = "") -> str:
    return f'<p class="{cls}">{esc(text)}</p>' if cls else f"<p>{esc(text)}</p>"


def html_table(
    header: Sequence[str],
    rows: Iterable[Sequence[Any]],
    numeric: Container[int] = range(1, 99),
    caption: str = "",
    compact: bool = False,
) -> str:
    """A table of escaped text; the ``numeric`` columns are right-aligned."""
    cls = lambda j: ' class="num"' if j in numeric else ""
    head = "".join(f"<th{cls(j)}>{esc(h)}</th>" for j, h in enumerate(header))
    body = "".join("<tr>" + "".join(f"<td{cls(j)}>{esc(c)}</td>" for j, c in enumerate(r)) + "</tr>" for r in rows)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    table = '<table class="compact">' if compact else "<table>"
    return f'<div class="scroll">{table}{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def html_figure(uri: str | None, caption: str, alt: str, missing: str = "there is nothing to plot") -> str:
    if uri is None:
        return _na(missing)
    return f'<figure><img src="{esc(uri)}" alt="{esc(alt)}"><figcaption>{esc(caption)}</figcaption></figure>'


def _section(number: int, key: str, title: str, body: str) -> str:
    cls = ' class="privacy"' if key == "privacy" else ""
    return f'<section id="{key}"{cls}><h2>{number}. {esc(title)}</h2>{body}</section>'


def _verdict_box(verdict: Verdict | None) -> str:
    """A section's verdict: its level in words and its sentence (empty without a verdict)."""
    if verdict is None:
        return ""
    return (
        f'<p class="verdict {esc(verdict.level)}"><strong>Verdict: {esc(VERDICT_WORDS[verdict.level])}.</strong> '
        f"{esc(verdict.text)}</p>"
    )


# -- readable values (release.json's parameters and options) --------------------------------------

_FRACTION = re.compile(r"^\s*(-?\d+)\s*/\s*(\d+)\s*$")
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
#: Rows of a list of records shown as a table before the rest is counted, not listed.
MAX_RECORD_ROWS = 40


def readable_number(value: Any) -> str:
    """A number for people: thousands separated, 4 significant digits, ×10ⁿ for the very large
    or small; integers of 16 digits or more (seeds, identifiers) as they are.

    >>> readable_number(0.04512957906362964), readable_number(1234567), readable_number(1.9979e13)
    ('0.04513', '1,234,567', '1.998 × 10¹³')
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value)) if abs(int(value)) >= 10**15 else f"{int(value):,}"
    x = float(value)
    if not math.isfinite(x):
        return "—"
    if x != 0 and (abs(x) >= 1e9 or abs(x) < 1e-4):
        mantissa, exponent = f"{x:.3e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"
    return f"{x:,.0f}" if abs(x) >= 1e4 else f"{x:,.4g}"


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, bool, int, float, np.integer, np.floating))


def _scalar_html(value: Any) -> str:
    """One value: numbers readable, a fraction 'p/q' as its decimal (exact value on hover)."""
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return esc(readable_number(value))
    text = str(value)
    match = _FRACTION.match(text)
    if match and int(match.group(2)) != 0:
        decimal = readable_number(int(match.group(1)) / int(match.group(2)))
        return f'<span title="{esc(text)} exactly">{esc(decimal)}</span>'
    if len(text) > 32 and " " not in text:  # a hash or a path: let it wrap anywhere
        return f"<code>{esc(text)}</code>"
    return esc(text)


def _key(key: Any) -> str:
    return esc(str(key).replace("_", " "))


def readable(value: Any) -> Html:
    """Any JSON value as HTML people can read: a mapping as a definition list, a list of records
    as a small table, a list of lists one item a line, numbers formatted (see :func:`readable_number`).

    >>> str(readable({"kept": [["x", "y"], ["z"]], "scale": "3/4"}))
    '<dl class="params"><dt>kept</dt><dd><ol class="params"><li>x, y</li><li>z</li></ol></dd><dt>scale</dt><dd><span title="3/4 exactly">0.75</span></dd></dl>'
    """
    if isinstance(value, Mapping):
        if not value:
            return Html("none")
        if all(_scalar(v) for v in value.values()) and len(value) > 6:
            # Many short entries (a value per column): one flowing line each, not a tall list.
            items = "".join(f'<li><span class="k">{_key(k)}</span> {_scalar_html(v)}</li>' for k, v in value.items())
            return Html(f'<ul class="inline">{items}</ul>')
        items = "".join(f"<dt>{_key(k)}</dt><dd>{readable(v)}</dd>" for k, v in value.items())
        return Html(f'<dl class="params">{items}</dl>')
    if isinstance(value, (list, tuple)):
        if not value:
            return Html("none")
        if all(_scalar(v) for v in value):
            return Html(", ".join(_scalar_html(v) for v in value))
        if all(isinstance(v, Mapping) for v in value):
            return _records(value)
        if all(isinstance(v, (list, tuple)) and all(_scalar(x) for x in v) for v in value):
            items = "".join(f"<li>{', '.join(_scalar_html(x) for x in v)}</li>" for v in value)
            return Html(f'<ol class="params">{items}</ol>')
        return Html('<ul class="params">' + "".join(f"<li>{readable(v)}</li>" for v in value) + "</ul>")
    return Html(_scalar_html(value))


def _records(rows: Sequence[Mapping[str, Any]]) -> Html:
    """A list of records (e.g. one per tree) as a table; a nested mapping in a cell on one line."""
    columns = list(dict.fromkeys(k for r in rows for k in r))

    def cell(v: Any) -> str:
        if isinstance(v, Mapping):
            return "; ".join(f"{_key(k)} {_scalar_html(x) if _scalar(x) else readable(x)}" for k, x in v.items()) or "—"
        return readable(v)

    shown = rows[:MAX_RECORD_ROWS]
    head = "<th>#</th>" + "".join(f"<th>{_key(c)}</th>" for c in columns)
    body = "".join(
        f"<tr><td>{i}</td>" + "".join(f"<td>{cell(r.get(c))}</td>" for c in columns) + "</tr>"
        for i, r in enumerate(shown, start=1)
    )
    more = f"<caption>The first {len(shown)} of {len(rows)} (release.json lists all).</caption>" if len(rows) > len(shown) else ""
    return Html(
        f'<div class="scroll"><table class="compact records">{more}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    )


# -- 1. privacy statement and release facts -------------------------------------------------------

_AMOUNTS = (("epsilon", "ε"), ("delta", "δ"), ("rho", "ρ"))


def _guarantee(privacy: Mapping[str, Any]) -> str:
    """One line: the definition and its amounts, e.g. 'pure-DP, ε = 5 in total (1.67 per set)'."""
    parts = []
    for key, symbol in _AMOUNTS:
        total, per = privacy.get(f"{key}_total"), privacy.get(f"{key}_per_set")
        if total is not None:
            parts.append(f"{symbol} = {fmt(total, 4)} in total" + (f" ({fmt(per, 4)} per set)" if per is not None else ""))
    definition = privacy.get("definition", "no definition stated")
    return ", ".join([str(definition)] + parts)


def _privacy(privacy: Mapping[str, Any], release: Mapping[str, Any], dataset: Mapping[str, Any]) -> str:
    method, rid = release.get("method", "—"), release.get("release_id", "—")
    out = [f'<p class="headline">Method <strong>{esc(method)}</strong> · release <code>{esc(rid)}</code></p>']
    if not privacy:
        return "".join(out) + _na("the evaluation carries no privacy statement, so no guarantee can be shown")
    if privacy.get("differentially_private") is False and "if_unseeded" not in privacy:  # a local guarantee
        out.append(
            f'<blockquote class="caveat"><strong>Local guarantee, not worst-case differential privacy.</strong> '
            f"{esc(privacy.get('guarantee', ''))}</blockquote>"
        )
    elif privacy.get("differentially_private") is False:  # a seeded test release, or the audit's broken variant
        out.append(
            f'<blockquote class="caveat"><strong>Not differentially private.</strong> {esc(privacy.get("definition", ""))}</blockquote>'
        )
        privacy = {
            **privacy.get("if_unseeded", {}),
            "definition": "none (test release); unseeded it would be: "
            + str(privacy.get("if_unseeded", {}).get("definition", "—")),
        }
    out.append(f'<p class="guarantee">{esc(_guarantee(privacy))}</p>')
    # The claim and any caveat stay in view; the rest is folded, so the summary follows within a screen.
    out.append(_fold("The whole statement", _statement_list(privacy)))
    out.append(_fold("Release facts", html_table(["fact", "value"], _release_facts(release, dataset), numeric=())))
    out.append(_forecast(release.get("forecast")))
    out.append(_fold("What the method chose / public parameters", _parameters(release.get("parameters"))))
    return "".join(out)


def _fold(title: str, content: str) -> str:
    """``content`` under a heading that opens it (folded on screen; printed open)."""
    return f'<details class="fold"><summary>{esc(title)}</summary>{content}</details>' if content else ""


def _forecast(forecast: Any) -> str:
    """The release's forecast (made from public inputs before anything was charged or measured; release.json's ``forecast``)."""
    if not isinstance(forecast, Mapping) or not forecast.get("summary"):
        return ""
    cls = ' class="caveat"' if forecast.get("verdict") in ("noise", "weak") else ""
    accepted = " The operator released it anyway (--accept-noise)." if forecast.get("accepted_noise") else ""
    rows = [[str(p.get("what", "")), str(p.get("verdict", "")), str(p.get("text", ""))] for p in forecast.get("parts") or []]
    return (
        f"<blockquote{cls}><strong>Forecast before any measurement: {esc(str(forecast.get('verdict', '')).upper())}</strong>: "
        f"{esc(forecast['summary'])}.{esc(accepted)}</blockquote>"
        + _fold(
            "The forecast, measurement by measurement",
            (html_table(["measurement", "verdict", "what the numbers say"], rows, numeric=()) if rows else "")
            + _p(
                f"Thresholds: {forecast.get('thresholds', '')}. Public inputs: {'; '.join(forecast.get('public_inputs') or [])}."
            ),
        )
    )


def _parameters(parameters: Any) -> str:
    """release.json's ``parameters``: what the method chose or set, shown readably, whatever the method."""
    intro = (
        "From release.json's <code>parameters</code>, published with the synthetic sets: the method's settings and "
        "what it chose on the way (the marginals it measured, its regime, its trees' shapes, its warnings). They are "
        "part of the release and covered by its privacy statement. Fractions are shown as decimals (the exact "
        "value on hover)."
    )
    if parameters is None or parameters == {} or parameters == []:
        return _na("the release records no parameters")
    return f'<p class="note">{intro}</p><div class="params-block">{readable(parameters)}</div>'


def _statement_list(privacy: Mapping[str, Any]) -> str:
    names = {
        "definition": "definition",
        "sets": "synthetic sets",
        "neighbouring": "neighbouring data sets",
        "public": "treated as public",
        "mechanism": "mechanism",
        "composition": "composition",
    }
    privacy = {k: v for k, v in privacy.items() if k not in ("measurements", "relation", "differentially_private")}
    for key, symbol in _AMOUNTS:
        names[f"{key}_total"], names[f"{key}_per_set"] = f"{symbol} (total)", f"{symbol} per set"
    order = list(names) + [k for k in privacy if k not in names]
    items = []
    for key in order:
        if key not in privacy:
            continue
        value = privacy[key]
        if isinstance(value, (list, tuple)):
            shown = "<ul>" + "".join(f"<li>{esc(v)}</li>" for v in value) + "</ul>" if value else "nothing"
        else:
            shown = esc(fmt(value, 6) if isinstance(value, (int, float)) else value)
        items.append(f"<dt>{esc(names.get(key, key))}</dt><dd>{shown}</dd>")
    return '<dl class="statement">' + "".join(items) + "</dl>"


def _release_facts(release: Mapping[str, Any], dataset: Mapping[str, Any]) -> list[list[str]]:
    def text(v: Any) -> str:
        if isinstance(v, (Mapping, list, tuple)):
            return readable(v)
        return fmt(v, 6) if isinstance(v, (int, float)) else str(v)

    facts = [
        ("release kind", release.get("release")),
        ("created", release.get("created")),
        ("dipsy version", release.get("dipsy_version")),
        ("seed", release.get("seed", "—") if release.get("seed") is not None else "none (randomness from the operating system)"),
        ("randomness", release.get("randomness")),
        ("columns", release.get("columns") or dataset.get("columns")),
        ("rows of the original", dataset.get("rows_original")),
        ("rows per synthetic set", release.get("rows") or dataset.get("rows_synthetic")),
        ("method options", release.get("options")),
        ("notes", release.get("notes")),
    ]
    return [[name, text(value)] for name, value in facts if value is not None]


def _header(release: Mapping[str, Any]) -> str:
    nav = "".join(f'<a href="#{key}">{i}. {esc(t)}</a>' for i, (key, t) in enumerate(SECTIONS, start=1))
    when = datetime.now(UTC).isoformat(timespec="seconds")
    return (
        "<header><h1>Evaluation of a synthetic data release</h1>"
        f'<p class="sub">{esc(release.get("method", ""))} · {esc(fmt(release.get("sets")))} synthetic set(s) · report written {esc(when)}</p>'
        f'<nav class="toc">{nav}</nav></header>'
    )


# -- 2. summary ----------------------------------------------------------------------------------


def _summary(ev: Mapping[str, Any], found: Mapping[str, Verdict] | None = None, sets: Any = None) -> str:
    rows = _marginal_rows(_mapping(ev.get("marginals"))) + _numeric_rows(_mapping(ev.get("numeric")))
    rows += _propensity_rows(_mapping(ev.get("propensity"))) + _relationship_rows(_mapping(ev.get("relationships")))
    rows += _sensitive_rows(_mapping(ev.get("sensitive"))) + _inference_rows(_mapping(ev.get("inference")), sets)
    if not rows:
        return _na("the evaluation holds no utility measures")
    out = []
    if found:
        titles = dict(SECTIONS)
        items = "".join(
            f'<tr class="{esc(v.level)}"><td><a href="#{key}">{esc(titles[key])}</a></td>'
            f'<td class="level">{esc(VERDICT_WORDS[v.level])}</td><td>{esc(v.text)}</td></tr>'
            for key, v in found.items()
        )
        out.append(
            "<h3>Verdicts</h3>"
            + _p(
                "One sentence per section, each with the threshold it applies (rules of thumb, "
                "explained in dipsy.evaluation.verdicts; a flag says where to look).",
                "note",
            )
        )
        out.append(
            f'<div class="scroll"><table class="verdicts"><thead><tr><th>section</th><th>verdict</th><th>why</th></tr></thead>'
            f"<tbody>{items}</tbody></table></div>"
        )
    rows = [[r[0], r[1] if isinstance(r[1], Html) else value_cell(r[1]), *r[2:]] for r in rows]
    out.append(
        "<h3>Headline numbers</h3>"
        + _p("Averaged over the synthetic sets. Each row says what the measure is and which direction is better.")
    )
    return "".join(out) + html_table(["measure", "value", "what it means", "better"], rows, numeric=())


def _marginal_rows(marginals: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for i, (k, part) in enumerate(_kway(marginals)):
        worst = " × ".join(map(str, part.get("worst_columns") or []))
        detail = f"worst {fmt(part.get('worst_tvd'))}" + (f": {worst}" if worst else "")
        meaning = (
            "Total variation distance between the original and synthetic shares of the cells of a column's table: half the sum of the absolute differences; 0 = identical, 1 = no overlap."
            if i == 0
            else f"The same, over the {_WAYS.get(k, k)} tables of columns."
        )
        rows.append([f"{k} marginals: mean TVD", value_cell(fmt(part.get("mean_tvd")), detail), meaning, "lower"])
    score = _mapping(marginals.get("k_marginal_score"))
    if score:
        phrase = _baseline_phrase(score).removeprefix(" — ")
        rows.append(
            [
                "all-pairs score",
                value_cell(fmt(score.get("score"), 4), phrase),
                "dipsy's own: (1 − mean TVD) × 1000 over every pair of columns as the domain bins them (not SDNist's score, which pairs columns jointly with a group column: evaluate with --groups), set beside random subsamples of the original, whose scores show what sampling error alone costs.",
                "higher",
            ]
        )
    return rows


_WAYS = {"1-way": "one-column", "2-way": "two-way", "3-way": "three-way"}


def _kway(marginals: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    keys = sorted((k for k in marginals if k.endswith("-way") and _mapping(marginals[k])), key=lambda k: k.split("-")[0])
    return [(k, marginals[k]) for k in keys]


def _baseline_phrase(score: Mapping[str, Any]) -> str:
    """Where the score falls among the subsample baselines, e.g. ' — between a 5% and a 10% subsample'."""
    s = nanmean([score.get("score")])
    base = plots.subsample_baselines(score)
    if not base or not math.isfinite(s):
        return ""
    below = [b for b in base if b[1] <= s]
    above = [b for b in base if b[1] > s]
    if not below:
        return f" — below even a {above[0][0]} subsample of the original ({fmt(above[0][1], 4)})"
    if not above:
        return f" — at least as good as a {below[-1][0]} subsample of the original ({fmt(below[-1][1], 4)})"
    return f" — between a {below[-1][0]} ({fmt(below[-1][1], 4)}) and a {above[0][0]} subsample ({fmt(above[0][1], 4)})"


def _numeric_rows(numeric: Mapping[str, Any]) -> list[list[str]]:
    stats = {key: nanmean([nanmean(_mapping(v).get(key)) for v in numeric.values()]) for key in ("U_m", "U_a", "ks")}
    rows = []
    if math.isfinite(stats["U_m"]):
        rows.append(
            [
                "U_m, mean over numeric columns",
                fmt(stats["U_m"]),
                "Largest gap between the original and synthetic empirical CDFs (share of rows ≤ x), over all x; 0 = identical.",
                "lower",
            ]
        )
    if math.isfinite(stats["U_a"]):
        rows.append(
            [
                "U_a, mean over numeric columns",
                fmt(stats["U_a"]),
                "Average squared gap between the two empirical CDFs at the pooled values; 0 = identical.",
                "lower",
            ]
        )
    if math.isfinite(stats["ks"]):
        rows.append(
            [
                "Kolmogorov–Smirnov, mean",
                fmt(stats["ks"]),
                "The two-sample KS statistic (the largest CDF gap, as computed by the KS test).",
                "lower",
            ]
        )
    return rows


def _propensity_rows(propensity: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    headline = str(propensity.get("headline") or "")
    yard = _yardsticks(propensity)
    for model in sorted(_models(propensity), key=lambda m: m != headline):  # the headline first
        part = propensity[model]
        name = _model_name(model, propensity) + (", the headline" if model == headline else "")
        detail = "; ".join(f"{label} {fmt(v)}" for label, v in yard) if model == headline else ""
        rows.append(
            [
                f"pMSE ratio ({name})",
                value_cell(fmt(nanmean(part.get("ratio"))), detail),
                f"Propensity mean squared error of a {model} classifier telling original from synthetic rows, divided by its expected value if both came from the same distribution; 1 = as indistinguishable as the model can tell.",
                "closer to 1",
            ]
        )
        rows.append(
            [
                f"standardised pMSE ({name})",
                fmt(nanmean(part.get("standardised"))),
                "(pMSE − null mean) / null standard deviation: how many null standard deviations the classifier does better than chance.",
                "closer to 0",
            ]
        )
    return rows


def _model_name(model: str, propensity: Mapping[str, Any]) -> str:
    """'logistic with interactions' when the logistic design has them, else the model's key."""
    designs = [d for d in _mapping(propensity.get(model)).get("design") or [] if isinstance(d, Mapping)]
    return f"{model} with interactions" if model == "logistic" and designs and designs[0].get("pairs") else model


def _yardsticks(propensity: Mapping[str, Any]) -> list[tuple[str, float]]:
    """The headline pMSE ratio of the independent-columns and binning-floor versions of the original."""
    out = []
    for key, label in (("independent", "independent columns"), ("floor", "binning floor")):
        ratio = nanmean([_mapping(propensity.get(key)).get("ratio")])
        if math.isfinite(ratio):
            out.append((label, ratio))
    return out


#: Keys of the propensity section that hold a yardstick's pMSE, not a model's per set.
_YARDSTICKS = ("independent", "floor")


def _models(propensity: Mapping[str, Any]) -> list[str]:
    return [k for k, v in propensity.items() if isinstance(v, Mapping) and "pmse" in v and k not in _YARDSTICKS]


def _relationship_rows(relationships: Mapping[str, Any]) -> list[list[str]]:
    ind = _mapping(relationships.get("indicators"))
    rows = []
    if math.isfinite(nanmean([ind.get("corr_mean_abs_diff")])):
        rows.append(
            [
                "correlations of indicators: mean |difference|",
                fmt(ind.get("corr_mean_abs_diff")),
                "Mean absolute difference between original and synthetic correlations of category indicators (column = category) for pairs of columns.",
                "lower",
            ]
        )
    if math.isfinite(nanmean([ind.get("slope_mean_abs_diff")])):
        rows.append(
            [
                "slopes of indicators: mean |difference|",
                fmt(ind.get("slope_mean_abs_diff")),
                "Mean absolute difference between the regression slopes of one indicator on another.",
                "lower",
            ]
        )
    return rows


def _inference_rows(inference: Mapping[str, Any], sets: Any = None) -> list[list[str]]:
    models = [m for m in inference.get("models") or [] if isinstance(m, Mapping)] or [inference]
    coefs = [c for m in models for c in m.get("coefficients") or [] if isinstance(c, Mapping)]
    overlap = nanmean([c.get("ci_overlap") for c in coefs])
    stdd = nanmean([abs(x) for x in finite([c.get("std_diff") for c in coefs])])
    rows = []
    one = single_set(inference.get("rule"), sets)
    if math.isfinite(overlap):
        rows.append(
            [
                "confidence interval overlap, mean",
                value_cell(
                    fmt(overlap), "synthetic intervals from one set: they ignore synthesis and noise variance" if one else ""
                ),
                "How much the 95% intervals from the original and from the synthetic sets cover each other (Karr et al. 2006); 1 = the same interval, 0 or less = disjoint."
                + (" A one-set interval is too narrow, so a high overlap flatters the release." if one else ""),
                "higher",
            ]
        )
    if math.isfinite(stdd):
        rows.append(
            [
                "standardised difference, mean |·|",
                fmt(stdd),
                "|synthetic − original estimate| in units of the original standard error.",
                "lower",
            ]
        )
    return rows


# -- 3. marginals --------------------------------------------------------------------------------


def _marginals(marginals: Mapping[str, Any], original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain) -> str:
    kway = _kway(marginals)
    if not kway and not marginals.get("k_marginal_score"):
        return _na("no marginals were evaluated")
    out = [
        _p(
            "The total variation distance (TVD) of a marginal is half the sum of the absolute differences between the original and the synthetic share of each cell: the share of rows that would have to move to turn one table into the other."
        )
    ]
    if kway:
        rows = [
            [
                k,
                fmt(p.get("count")),
                fmt(p.get("mean_tvd")),
                fmt(p.get("worst_tvd")),
                " × ".join(map(str, p.get("worst_columns") or [])) or "—",
            ]
            for k, p in kway
        ]
        out.append(html_table(["marginals", "count", "mean TVD", "worst TVD", "worst columns"], rows, numeric=range(1, 4)))
    out.append("<h3>One-way marginals</h3>")
    one = _mapping(marginals.get("1-way"))
    out.append(
        html_figure(
            plots.tvd_bars(one) if one else None,
            "TVD of each column's distribution: bar = mean over the synthetic sets, dots = each set. Lower is better.",
            "bar chart of one-way TVD per column",
            "no one-way marginals were evaluated",
        )
    )
    out.append("<h3>Worst two-way marginals</h3>" + _heatmaps(_mapping(marginals.get("2-way")), original, tables, domain))
    out.append("<h3>All-pairs score</h3>" + _kscore(_mapping(marginals.get("k_marginal_score"))))
    part = _mapping(marginals.get("synthesized"))
    if part:
        out.append(
            "<h3>All-pairs score over the synthesized columns</h3>"
            + _p(
                f"The release repeats {esc(', '.join(map(str, part.get('repeated') or [])))} as they are, so the pairs of "
                f"those columns are the original's own. Over the {fmt(part.get('pairs'))} pairs that hold a synthesized "
                f"column the score is {fmt(part.get('score'), 4)}{_baseline_phrase(part)}, against "
                f"{fmt(_mapping(marginals.get('k_marginal_score')).get('score'), 4)} over every pair."
            )
        )
    if marginals.get("sdnist"):
        out.append("<h3>SDNist's k-marginal score</h3>" + _sdnist(_mapping(marginals.get("sdnist"))))
    if marginals.get("by_group"):
        out.append("<h3>Inside each group</h3>" + _by_group(_mapping(marginals.get("by_group"))))
    return "".join(out)


def _missing(missing: Mapping[str, Any]) -> str:
    """One small table per column with declared missing states: each state's share of the
    original's rows and of the synthetic sets' (their mean, and the range over the sets)."""
    columns = [c for c, v in missing.items() if isinstance(v, Mapping)]
    if not columns:
        return ""
    out = [
        "<h3>Missing values</h3>",
        _p(
            "The share of rows in each missing state the domain declares (an empty cell, a reserved code), "
            "in the original and in the synthetic sets, then by the column a rule ties the state to (or, "
            "without a rule, the one across whose levels it varies most in the original). The numeric "
            "metrics leave these rows out."
        ),
    ]
    for c in columns:
        part = _mapping(missing[c])
        original = list(part.get("original") or [])
        synthetic = [list(s or []) for s in part.get("synthetic") or []]
        rows = []
        for k, state in enumerate(part.get("states") or []):
            state = _mapping(state)
            code = state.get("code")
            per_set = [s[k] for s in synthetic if k < len(s)]
            spread = f"{_percent(min(per_set))}–{_percent(max(per_set))}" if len(per_set) > 1 else "—"
            rows.append(
                [
                    str(state.get("label", "")),
                    "empty" if code is None else str(code),
                    _percent(original[k]) if k < len(original) else "—",
                    _percent(nanmean(per_set)) if per_set else "—",
                    spread,
                ]
            )
        out.append(
            html_table(
                ["state", "code", "original", "synthetic (mean)", "synthetic (range over sets)"],
                rows,
                numeric=range(2, 5),
                caption=f"{c}: share of rows in each missing state",
                compact=True,
            )
        )
        for other, by in _mapping(part.get("by")).items():
            by = _mapping(by)
            per_set = [list(s or []) for s in by.get("synthetic") or []]
            levels = list(by.get("levels") or [])
            original = list(by.get("original") or [])
            out.append(
                html_table(
                    [other, "original", "synthetic (mean)"],
                    [
                        [
                            str(level),
                            _percent(original[k]) if k < len(original) else "—",
                            _percent(nanmean([s[k] for s in per_set if k < len(s)])) if per_set else "—",
                        ]
                        for k, level in enumerate(levels)
                    ],
                    numeric=range(1, 3),
                    caption=f"{c}: share of rows in a missing state, by {other}",
                    compact=True,
                )
            )
    return "".join(out)


def _rules(rules: Mapping[str, Any]) -> str:
    """One small table of the domain's edit rules: the records breaking each, in the original and
    in the synthetic sets (their mean, and the largest over the sets)."""
    per_rule = [_mapping(r) for r in rules.get("rules") or [] if isinstance(r, Mapping)]
    if not per_rule:
        return ""
    rows = []
    for part in [*per_rule, {"name": "any rule", "rule": "", **_mapping(rules.get("any"))}]:
        synthetic = [x for x in part.get("synthetic") or [] if isinstance(x, (int, float))]
        rows.append(
            [
                str(part.get("name", "")),
                str(part.get("rule", "")),
                fmt(part.get("original")) + f" ({_percent(part.get('original_share'))})",
                fmt(nanmean(synthetic)) if synthetic else "—",
                fmt(max(synthetic)) if synthetic else "—",
            ]
        )
    return (
        "<h3>Edit rules</h3>"
        + _p(
            "Records in a combination the domain's edit rules forbid (as SDNist's inconsistency counts). A release "
            "enforces the rules on its records, so every set should show 0; the original shows what the data break."
        )
        + html_table(
            ["name", "rule", "original", "synthetic (mean)", "synthetic (most)"],
            rows,
            numeric=range(2, 5),
            caption="records breaking each edit rule",
            compact=True,
        )
    )


def _percent(x: Any) -> str:
    try:
        return f"{100 * float(x):.1f}%" if math.isfinite(float(x)) else "—"
    except (TypeError, ValueError):
        return "—"


def _sdnist(s: Mapping[str, Any]) -> str:
    """SDNist 2.x's k-marginal score, its subsample equivalent and its per-group scores beside the
    40 % subsample baseline (:mod:`.sdnist`)."""
    cols = ", ".join(map(str, s.get("groups") or []))
    g = _mapping(s.get("by_group"))
    equivalent = ", ".join(f"{100 * float(f):.0f} %" for f in s.get("equivalent_fraction") or [])
    text = (
        f"SDNist 2.x's definition: each of the {fmt(s.get('pairs'))} pairs of columns (numbers in 20 percentile-rank bins "
        f"of the original) scored jointly with {esc(cols)}, 500 × (2 − mean L1 distance). Score "
        f"{fmt_sets(s.get('per_set'))}: about what a random {equivalent} subsample of the original scores. "
        f"Inside each of the {fmt(g.get('groups_scored'))} groups, 1000 × (1 − mean L1 capped at the group's share): mean "
        f"{fmt_sets(g.get('mean'))}, worst {fmt_sets(g.get('worst'))}, against {fmt(g.get('baseline_mean'), 4)} for "
        f"{100 * float(g.get('baseline_fraction') or 0):.0f} % subsamples of the original (the mean of five draws)."
    )
    rows = [
        [
            ", ".join(f"{k} = {v}" for k, v in _mapping(w.get("group")).items()),
            fmt(w.get("rows_original")),
            fmt(w.get("score"), 4),
            fmt(w.get("baseline"), 4),
        ]
        for w in g.get("worst_groups") or []
    ]
    subsamples = [[f"{100 * float(b['fraction']):.0f} %", fmt(b.get("score"), 4)] for b in s.get("subsamples") or []]
    return (
        _p(text)
        + html_table(["worst groups", "original rows", "score", "40 % subsample"], rows, numeric=range(1, 4))
        + _fold(
            "SDNist's whole-file score of random subsamples of the original",
            html_table(["subsample", "score"], subsamples, compact=True),
        )
    )


def _by_group(g: Mapping[str, Any]) -> str:
    """The per-group score: its definition, the spread over groups, and the worst groups."""
    cols = ", ".join(map(str, g.get("groups") or []))
    q = _mapping(g.get("quantiles"))
    text = (
        f"Inside each of the {fmt(g.get('groups_scored'))} groups of {esc(cols)} that the original holds, the score is "
        f"1000 × (1 − mean TVD) of {fmt(len(g.get('marginals') or []))} {fmt(g.get('k'))}-way marginals of the other columns "
        f"(of {fmt(g.get('available'))}), each group's distribution against the original's in the same group; the mean over "
        f"groups is {fmt(g.get('score'), 4)} (median group {fmt(q.get('50%'), 4)}, worst {fmt(q.get('0%'), 4)}). This is the "
        "NIST 2020 challenge's view: a release can match the whole file's marginals and still get each area wrong."
    )
    outside = [r for r in g.get("rows_outside") or [] if r]
    if outside:
        text += f" Synthetic rows in groups the original does not hold (not scored): {', '.join(map(fmt, g.get('rows_outside') or []))}."
    rows = [
        [
            ", ".join(f"{k} = {v}" for k, v in _mapping(w.get("group")).items()),
            fmt(w.get("rows_original")),
            fmt_sets(w.get("rows_synthetic")),
            fmt(w.get("score"), 4),
        ]
        for w in g.get("worst") or []
    ]
    fig = html_figure(
        plots.group_score_plot(g),
        "Each group's score (dots; one colour per synthetic set), worst first, and the mean over groups (dashed).",
        "per-group k-marginal scores",
    )
    return _p(text) + fig + html_table(["worst groups", "original rows", "synthetic rows", "score"], rows, numeric=range(1, 4))


def _heatmaps(two_way: Mapping[str, Any], original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain) -> str:
    items = [m for m in two_way.get("marginals") or [] if isinstance(m, Mapping) and len(m.get("columns") or []) == 2]
    items = sorted(items, key=lambda m: -_sortable(nanmean(m.get("tvd"))))[:WORST_HEATMAPS]
    if not items or not tables:
        return _na("no two-way marginals were evaluated" if tables else "the release holds no synthetic sets")
    figs = []
    for m in items:
        cols = [str(c) for c in m["columns"]]
        uri = plots.marginal_heatmaps(original, tables[0], cols, domain, nanmean(m.get("tvd")))
        figs.append(
            html_figure(
                uri,
                f"{cols[0]} × {cols[1]}: cell shares in the original and in synthetic set 1, and their difference (red = more in the synthetic set). Long category lists are shown in at most {plots.MAX_LEVELS} groups.",
                f"heat maps of {cols[0]} by {cols[1]}",
                f"{cols[0]} × {cols[1]} cannot be drawn (a column is missing from the data or the domain)",
            )
        )
    return "".join(figs)


def _sortable(x: float) -> float:
    return x if math.isfinite(x) else -math.inf


def _kscore(score: Mapping[str, Any]) -> str:
    if not score:
        return _na("no all-pairs score was computed")
    text = f"Score {fmt(score.get('score'), 4)}{_baseline_phrase(score)}. "
    rows = [
        [f"random {label} subsample of the original" + (f" ({fmt(n)} rows)" if n is not None else ""), fmt(v, 4)]
        for label, v, n in plots.subsample_baselines(score)
    ]
    rows += [[f"synthetic set {i}", fmt(v, 4)] for i, v in enumerate(score.get("per_set") or [], start=1)]
    fig = html_figure(
        plots.kmarginal_plot(score),
        "Score of each synthetic set (dots) and their mean (dashed) against the scores of random subsamples of the original data (grey lines). A synthetic set that scores like a p% subsample is about as faithful to the marginals as p% of the real rows.",
        "all-pairs score against subsample baselines",
    )
    return (
        _p(text + "Higher is better; 1000 means identical marginals.") + fig + html_table(["data", "score"], rows, compact=True)
    )


# -- 4. numeric columns --------------------------------------------------------------------------


def _numeric(numeric: Mapping[str, Any], original: pd.DataFrame, tables: Sequence[pd.DataFrame], domain: Domain) -> str:
    columns = [c for c, v in numeric.items() if isinstance(v, Mapping)]
    if not columns:
        return _na("the release has no numeric columns")
    intro = _p(
        "U_m is the largest and U_a the average squared gap between the empirical CDFs of the original and a synthetic set (Hu's ECDF utility); KS is the two-sample Kolmogorov–Smirnov statistic. For all three, 0 means identical and lower is better."
    )
    floors = {c: _mapping(numeric[c].get("floor")) for c in columns}
    out = [intro]
    if any(floors.values()):
        out.append(
            _p(
                "Binning floor: a synthesizer that sees a numeric column through the domain's bins releases values drawn "
                "uniformly inside each bin, so it cannot come closer to the original than the original itself with each "
                "value redrawn uniformly inside its own bin. That redraw (seeded, like the evaluation) is shown beside the "
                "synthetic figures: a synthetic figure near the floor's is as good as these bins allow, whatever the budget; "
                "narrower public bins would lower the floor."
            )
        )
    rows = []
    for c in columns:
        parts = numeric_parts(numeric[c])
        means = [fmt(nanmean(numeric[c].get(key))) for key in ("U_m", "U_a", "ks")]
        floor = floors[c]
        rows.append(
            [
                c,
                *means,
                fmt(floor.get("U_m")) if floor else "—",
                fmt(parts["mean_original"], 4),
                fmt(floor.get("mean"), 4) if floor else "—",
                fmt(nanmean(parts["mean_synthetic"]), 4),
            ]
        )
    header = ["column", "U_m", "U_a", "KS", "U_m (binning floor)", "mean (original)", "mean (binning floor)", "mean (synthetic)"]
    if not any(floors.values()):
        header, rows = [h for h in header if "floor" not in h], [[v for j, v in enumerate(r) if j not in (4, 6)] for r in rows]
    out.append(
        html_table(header, rows, caption="Means over the synthetic sets; the table under each column's plots lists every set.")
    )
    for c in columns:
        out.append(_numeric_column(c, numeric[c], original, tables, domain[c] if c in domain else None, domain))
    return "".join(out)


def numeric_parts(stats: Mapping[str, Any]) -> dict[str, Any]:
    """Means and quantiles of one numeric column, from either layout of the evaluation.

    Nested: ``mean: {original, synthetic}``, ``quantiles: {original: {level: q}, synthetic: [...]}``;
    flat: ``mean_original``, ``mean_synthetic``, ``quantiles: [levels]``, ``quantiles_original``,
    ``quantiles_synthetic`` (one list per set).
    """
    mean, q = _mapping(stats.get("mean")), stats.get("quantiles")
    if isinstance(q, Mapping):
        q_orig = _mapping(q.get("original"))
        levels = list(q_orig)
        orig = [q_orig[level] for level in levels]
        syn = [[_mapping(s).get(level) for level in levels] for s in q.get("synthetic") or []]
    else:
        levels, orig = list(q or []), list(stats.get("quantiles_original") or [])
        syn = [list(s or []) for s in stats.get("quantiles_synthetic") or []]
    return {
        "mean_original": mean.get("original", stats.get("mean_original")),
        "mean_synthetic": list(mean.get("synthetic", stats.get("mean_synthetic")) or []),
        "levels": levels,
        "quantiles_original": orig,
        "quantiles_synthetic": syn,
    }


def _numeric_column(
    name: str,
    stats: Mapping[str, Any],
    original: pd.DataFrame,
    tables: Sequence[pd.DataFrame],
    column: Any,
    domain: Domain | None = None,
) -> str:
    floor = _mapping(stats.get("floor"))
    redrawn = None
    if floor and column is not None and domain is not None and name in original:
        # The evaluation's own redraw (same seed, same rows), for the plot.
        redrawn = plots.finite(
            redraw_in_bins(original, domain.project([name]), int(floor.get("seed") or 0))[name].to_numpy(float)
        )
    hist = html_figure(
        plots.numeric_histograms(original, tables, name, column),
        "Share of rows per bin (the domain's bins when it has them): original filled, synthetic sets as lines.",
        f"histograms of {name}",
        f"{name} has no values to plot",
    )
    ecdf_caption = "Empirical CDFs; U_m is the largest vertical gap between the black and a coloured line." + (
        " Grey dotted: the binning floor, the original redrawn inside its bins." if redrawn is not None else ""
    )
    ecdf = html_figure(
        plots.numeric_ecdfs(original, tables, name, redrawn),
        ecdf_caption,
        f"empirical CDFs of {name}",
        f"{name} has no values to plot",
    )
    # Heading and plots kept on one printed page; the table may follow on the next.
    return (
        f'<div class="keep"><h3>{esc(name)}</h3><div class="pair">{hist}{ecdf}</div></div>'
        + _floor_note(name, floor, stats, column)
        + _quantile_table(stats)
    )


def _floor_note(name: str, floor: Mapping[str, Any], stats: Mapping[str, Any], column: Any) -> str:
    """Where the bin-uniform draw biases the mean, how much and which bin causes it."""
    shift = nanmean([floor.get("expected_mean_shift")]) if floor else math.nan
    if not math.isfinite(shift) or abs(shift) <= judge.MEAN_SHIFT_FLAG:
        return ""
    labels = plots.code_labels(column) if column is not None and getattr(column, "bins", None) is not None else []
    parts = []
    for b in [b for b in floor.get("bins") or [] if isinstance(b, Mapping)]:
        k = int(b.get("bin", -1))
        label = labels[k] if 0 <= k < len(labels) else f"{fmt(b.get('lower'))}–{fmt(b.get('upper'))}"
        share = nanmean([b.get("shift")])
        if math.isfinite(share) and abs(share) >= max(0.005, 0.1 * abs(shift)):  # the bins that matter, not every one
            parts.append(
                f"{_signed_pct(share)} from the bin {label} (its {fmt(b.get('rows'))} original rows average "
                f"{fmt(b.get('mean_original'), 4)}, a uniform draw inside it {fmt(b.get('mean_uniform'), 4)})"
            )
    where = ": " + "; ".join(parts) if parts else ""
    drawn = nanmean([floor.get("mean_shift")])
    this = f" (this draw: {_signed_pct(drawn)})" if math.isfinite(drawn) else ""
    syn = numeric_parts(stats)
    orig, syn_mean = nanmean([syn["mean_original"]]), nanmean(syn["mean_synthetic"])
    syn_shift = (syn_mean - orig) / abs(orig) if math.isfinite(orig) and orig and math.isfinite(syn_mean) else math.nan
    compare = (
        f" The synthetic sets' mean is {_signed_pct(syn_shift)} from the original's: judge it against the floor, not against 0."
        if math.isfinite(syn_shift)
        else ""
    )
    return (
        f'<p class="caveat"><strong>The bins bias the mean of {esc(name)}.</strong> Redrawing each original value uniformly '
        f"inside its own bin moves the mean by {esc(_signed_pct(shift))} in expectation{esc(this)}{esc(where)}. A synthesizer "
        f"that draws inside these bins inherits that shift whatever its budget.{esc(compare)} Narrower public bins where the "
        "values are sparse and skewed (usually the top one) would remove most of it.</p>"
    )


def _signed_pct(x: float) -> str:
    return f"{100 * x:+.1f} %" if math.isfinite(x) else "—"


def _quantile_table(stats: Mapping[str, Any]) -> str:
    parts = numeric_parts(stats)
    floor = _mapping(stats.get("floor"))
    m = max(len(parts["quantiles_synthetic"]), len(parts["mean_synthetic"]), len(stats.get("U_m") or []))
    extra = ["binning floor"] if floor else []
    header = ["statistic", "original"] + extra + [f"set {k}" for k in range(1, m + 1)]
    f_mean = [fmt(floor.get("mean"), 4)] if floor else []
    rows = [["mean", fmt(parts["mean_original"], 4)] + f_mean + [fmt(v, 4) for v in _pad(parts["mean_synthetic"], m)]]
    syn = _pad(parts["quantiles_synthetic"], m, [])
    f_q = list(floor.get("quantiles") or [])
    for i, level in enumerate(parts["levels"]):
        orig = _pad(parts["quantiles_original"], i + 1)[i]
        f_cell = [fmt(_pad(f_q, i + 1)[i], 4)] if floor else []
        rows.append([f"quantile {fmt(level)}", fmt(orig, 4)] + f_cell + [fmt(_pad(s, i + 1)[i], 4) for s in syn])
    for key, label in (("U_m", "U_m"), ("U_a", "U_a"), ("ks", "KS"), ("ks_pvalue", "KS p-value")):
        if stats.get(key) is not None:
            f_cell = [fmt(floor.get(key)) if key in floor else ""] if floor else []
            rows.append([label, ""] + f_cell + [fmt(v) for v in _pad(stats.get(key), m)])
    caption = (
        (
            "Binning floor: the original with each value redrawn uniformly inside its own bin; its U_m, U_a and KS are "
            "against the original, the least a synthesizer of these bins can reach."
        )
        if floor
        else ""
    )
    return html_table(header, rows, caption=caption)


def _pad(values: Any, m: int, fill: Any = None) -> list[Any]:
    values = list(values or [])
    return values + [fill] * (m - len(values))


# -- 5. propensity -------------------------------------------------------------------------------


def _propensity(propensity: Mapping[str, Any]) -> str:
    models = _models(propensity)
    if not models:
        return _na("no propensity scores were computed")
    intro = _p(
        "A classifier is trained to tell original rows from synthetic rows. The propensity mean squared error (pMSE, Snoke et al. 2018) measures how far its predicted probabilities stray from the share of synthetic rows; the null mean and standard deviation are what pMSE would be if both came from the same distribution. A ratio near 1 and a standardised pMSE near 0 are good; large values mean the synthetic rows are easy to spot."
    )
    out = [intro]
    headline = str(propensity.get("headline") or "")
    if headline in models:
        designs = [d for d in _mapping(propensity[headline]).get("design") or [] if isinstance(d, Mapping)]
        how = str(designs[0].get("description")) if designs and designs[0].get("description") else headline
        out.append(
            f'<p class="headline-model"><strong>Headline: the {esc(_model_name(headline, propensity))} model</strong> — '
            f"{esc(how)}. Main effects alone see only each column's own distribution: a release that keeps every marginal "
            "and shuffles each column on its own would score as well as the original's own subsample; the interactions "
            "catch the lost relationships. CART is shown beside it, as a check of another kind.</p>"
        )
    keys = (
        ("pmse", "pMSE"),
        ("null_mean", "null mean"),
        ("null_sd", "null sd"),
        ("standardised", "standardised"),
        ("ratio", "ratio"),
    )
    rows = []
    for model in sorted(models, key=lambda m: m != headline):
        part = propensity[model]
        n = max(len(part.get(k) or []) for k, _ in keys)
        rows += [[model, f"set {i + 1}"] + [fmt(_pad(part.get(k), n)[i]) for k, _ in keys] for i in range(n)]
        if n > 1:
            rows.append([model, "mean"] + [fmt(nanmean(part.get(k))) for k, _ in keys])
    for key, label in (
        ("independent", "original, columns shuffled independently"),
        ("floor", "original, redrawn inside its bins"),
    ):
        part = _mapping(propensity.get(key))
        if part:
            rows.append([f"{headline or 'logistic'} (yardstick)", label] + [fmt(part.get(k)) for k, _ in keys])
    out.append(html_table(["model", "set"] + [label for _, label in keys], rows, numeric=range(2, 99)))
    if any(_mapping(propensity.get(k)) for k in ("independent", "floor")):
        out.append(
            _p(
                "Yardsticks, scored by the headline model against the original: the original with each column shuffled on "
                "its own (every marginal kept, every relationship broken: what a release that learnt only the one-way "
                "distributions would score) and, with binned numeric columns, the original with each value redrawn "
                "uniformly inside its bin (the best a synthesizer of those bins can score; it shares every other value "
                "with the original row by row, so it can score under 1).",
                "note",
            )
        )
    if propensity.get("rows_used") is not None:
        out.append(_p(_rows_used(propensity.get("rows_used"), propensity.get("max_rows")), "note"))
    if propensity.get("caveat"):
        out.append(f'<blockquote class="caveat"><strong>Caveat.</strong> {esc(propensity["caveat"])}</blockquote>')
    return "".join(out)


def _rows_used(used: Any, cap: Any) -> str:
    """A sentence on how many rows the classifiers saw (an int, or one mapping per set)."""
    if isinstance(used, (list, tuple)):
        texts = [", ".join(f"{k} {fmt(v)}" for k, v in u.items()) if isinstance(u, Mapping) else fmt(u) for u in used]
        shown = texts[0] if len(set(texts)) == 1 else "; ".join(f"set {i}: {t}" for i, t in enumerate(texts, start=1))
    else:
        shown = fmt(used)
    limit = f" (at most {fmt(cap)} of each, sampled at random)" if cap is not None else ""
    return f"Rows used per model fit: {shown}{limit}."


# -- 6. relationships ----------------------------------------------------------------------------


def _relationships(relationships: Mapping[str, Any]) -> str:
    ind, num = _mapping(relationships.get("indicators")), _mapping(relationships.get("numeric"))
    if not ind and not num:
        return _na("no relationships were evaluated")
    protected = [" × ".join(map(str, p)) for p in relationships.get("protected") or [] if isinstance(p, (list, tuple))]
    out = (
        []
        if "protected" not in relationships
        else [
            _p(
                f"Protected: {', '.join(protected)}, measured as the domain's declared analyses. Every other relationship "
                "below is not protected: the release holds it only as far as the method's own choices happened to measure it."
                if protected
                else "Not protected: the domain declares no analysis the release measured for, so every relationship below "
                "holds only as far as the method's own choices happened to measure it (declare the analyses that matter in "
                "the domain's analyses: to have privsyn, mst or aim measure them first).",
                "note",
            )
        ]
    )
    out.append("<h3>Indicator pairs</h3>" + _pairs_block(ind, "indicator", "no indicator pairs were evaluated"))
    out.append("<h3>Numeric pairs</h3>" + _pairs_block(num, "numeric", "there are fewer than two numeric columns"))
    return "".join(out)


def _pairs_block(part: Mapping[str, Any], kind: str, missing: str) -> str:
    pairs = [p for p in part.get("pairs") or [] if isinstance(p, Mapping)]
    scalars = [
        [_PAIR_FACTS.get(k, k.replace("_", " ")), fmt(v)]
        for k, v in part.items()
        if k != "pairs" and not isinstance(v, (Mapping, list, tuple))
    ]
    if not pairs and not scalars:
        return _na(missing)
    out = []
    if kind == "indicator":
        out.append(
            _p(
                "Each column's categories become 0/1 indicators (column = category); for pairs of indicators from different columns, the correlation and the slope of one regressed on the other are computed in the original and in each synthetic set. Points on the 45° line are reproduced exactly. "
                "A column with two categories enters by one indicator, its rarer category: the other is its mirror image (the same slopes and correlations with the sign flipped), which would count every relationship twice."
            )
        )
    if scalars:
        out.append(html_table(["measure", "value"], scalars, compact=True))
    if pairs:
        out.append(
            html_figure(
                plots.relationship_scatter(pairs, kind),
                "Original (x) against synthetic (y), one dot per pair and set; the grey line is y = x.",
                f"scatter of original against synthetic {kind} correlations",
                "the pairs carry no finite values",
            )
        )
        out.append(_pairs_table(pairs))
    return "".join(out)


_PAIR_FACTS = {
    "corr_mean_abs_diff": "mean |difference| of correlations",
    "slope_mean_abs_diff": "mean |difference| of slopes",
    "mean_abs_diff": "mean |difference| of correlations",
    "indicators": "indicators (column = category)",
    "pairs_available": "pairs available",
    "pairs_used": "pairs evaluated",
    "mirrors_dropped": "two-category columns entered by one indicator",
}


def _pairs_table(pairs: Sequence[Mapping[str, Any]]) -> str:
    def gap(p: Mapping[str, Any]) -> float:
        return abs(nanmean(p.get("corr_synthetic")) - nanmean([p.get("corr_original")]))

    worst = sorted(pairs, key=lambda p: -_sortable(gap(p)))[:TOP_PAIRS]
    header = ["x", "y", "corr. original", "corr. synthetic"]
    rows = [
        [str(p.get("x", "")), str(p.get("y", "")), fmt(p.get("corr_original")), fmt(nanmean(p.get("corr_synthetic")))]
        for p in worst
    ]
    if any("slope_original" in p for p in pairs):
        header += ["slope original", "slope synthetic"]
        rows = [r + [fmt(p.get("slope_original")), fmt(nanmean(p.get("slope_synthetic")))] for r, p in zip(rows, worst)]
    which = (
        f"The {len(worst)} pairs (of {len(pairs)}) whose correlation is reproduced worst"
        if len(worst) < len(pairs)
        else "Every pair, the worst reproduced first"
    )
    return html_table(header, rows, numeric=range(2, 99), caption=f"{which}; synthetic values are means over the sets.")


# -- 7. sensitive attributes ---------------------------------------------------------------------


def _sensitive(part: Mapping[str, Any], sets: Any = None) -> str:
    """S-004 §6's utility outputs: joint proportions, indicator slopes and correlations, logistic models."""
    if not part:
        return _na("the release names no sensitive columns (a release of rdt does; or pass --sensitive)")
    sens, pub = ", ".join(map(str, part.get("sensitive") or [])), ", ".join(map(str, part.get("public") or []))
    out = [
        _p(
            f"Synthetic sensitive columns ({sens}) against the public ones ({pub}), as the Duke random-decision-tree "
            "report (S-004 §6) judges them: the joint proportions of their categories with the public columns', the slopes "
            "and correlations of their category indicators, and a logistic regression of a sensitive category on the public columns."
        )
    ]
    skipped = _mapping(part.get("skipped"))
    if skipped:
        out.append(_p("Left out: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()) + ".", "note"))
    out.append("<h3>Joint proportions</h3>")
    props = _mapping(part.get("proportions"))
    tables = [" × ".join(map(str, t)) for t in props.get("tables") or [] if isinstance(t, (list, tuple))]
    cells = [c for c in props.get("cells") or [] if isinstance(c, (int, np.integer))]
    groups = (
        [f"{len(t.split(' × '))}-way" for t, n in zip(tables, cells) for _ in range(int(n))]
        if len(cells) == len(tables)
        else None
    )
    by_way = "; ".join(f"{k} cells r = {fmt_sets(v)}" for k, v in _mapping(props.get("r_by_way")).items())
    out.append(
        html_figure(
            plots.agreement_scatter(
                props.get("original") or [], props.get("synthetic") or [], "joint proportion", props.get("r"), groups
            ),
            f"Every cell of the tables {'; '.join(tables)}: its share of the original (x) and of each synthetic set (y); "
            f"the grey line is y = x. The correlation r over the cells is S-004's Fig. 3b measure ({by_way}).",
            "scatter of joint proportions, original against synthetic",
        )
    )
    worst = [t for t in part.get("tables") or [] if isinstance(t, Mapping)]
    rows = [[" × ".join(map(str, t.get("columns", []))), fmt(nanmean(t.get("tvd"))), fmt_sets(t.get("tvd"))] for t in worst[:15]]
    if rows:
        mean_text = "; ".join(f"{k} tables {fmt(v)}" for k, v in _mapping(part.get("tvd_mean")).items())
        shown = f"The {len(rows)} of {len(worst)} tables" if len(rows) < len(worst) else "Every table"
        out.append(
            html_table(
                ["table", "TVD, mean over sets", "per set"],
                rows,
                caption=f"{shown}, reproduced worst first: total variation distance ½Σ|p − q| of the proportions (0 = identical). Mean: {mean_text}.",
            )
        )
    out.append("<h3>Indicator slopes and correlations</h3>")
    ind = _mapping(part.get("indicators"))
    pairs = [p for p in ind.get("pairs") or [] if isinstance(p, Mapping)]
    if pairs:
        facts = [
            ["pairs (a sensitive category with another column's)", fmt(len(pairs))],
            ["correlation of slopes, synthetic with original", fmt_sets(ind.get("slope_r"))],
            ["correlation of correlations, synthetic with original", fmt_sets(ind.get("corr_r"))],
            ["mean |difference| of slopes", fmt_sets(ind.get("slope_mean_abs_diff"))],
            ["mean |difference| of correlations", fmt_sets(ind.get("corr_mean_abs_diff"))],
        ]
        out.append(html_table(["measure", "per set"], facts, compact=True))
        out.append(
            html_figure(
                plots.relationship_scatter(pairs, "indicator", {"slope": ind.get("slope_r"), "corr": ind.get("corr_r")}),
                "Each pair of a sensitive category's indicator x = 1[S = s] with another column's y = 1[B = b] (S-004 Figs. 3c, 3d), "
                "original (x axis) against each synthetic set (y axis), the grey line y = x: the slope of y on x, "
                "β₁ = P(y | x) − P(y | not x), and the correlation r = β₁ · sqrt(P(x)(1 − P(x)) / (P(y)(1 − P(y)))).",
                "scatters of indicator slopes and correlations, original against synthetic",
                "the pairs carry no finite values",
            )
        )
        out.append(_pairs_table(pairs))
    else:
        out.append(_na("no indicator pairs (every category is constant in the original)"))
    out.append("<h3>Logistic regression of a sensitive category</h3>")
    for column, model in _mapping(part.get("logit")).items():
        out.append(_logit_block(str(column), _mapping(model), sets))
    return "".join(out)


def _logit_block(column: str, model: Mapping[str, Any], sets: Any = None) -> str:
    response = str(model.get("response", column))
    if model.get("error") or not model.get("coefficients"):
        return _p(f"1[{response}] on the public columns: not comparable — {model.get('error', 'no coefficients')}.", "note")
    coefs = [c for c in model.get("coefficients") or [] if isinstance(c, Mapping)]
    reference = ", ".join(f"{k} = {v}" for k, v in _mapping(model.get("reference")).items())
    pooled = _mapping(model.get("pooled"))
    absent = _mapping(model.get("pooled_absent"))
    how = (
        f"Levels of a predictor under {fmt(model.get('pooled_below'))} of the original or past its {fmt(model.get('levels_kept'))} "
        'most common are pooled as "other"'
        + (f" ({'; '.join(f'{k}: {len(v)} levels' for k, v in pooled.items())})" if pooled else " (none here)")
    )
    if absent:
        how += (
            "; so are levels absent from a synthetic set ("
            + "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in absent.items())
            + ")"
        )
    merged = _mapping(model.get("merged"))
    if merged:
        how += (
            "; where the pooled levels are absent from some of the data, they join the least common kept level ("
            + ", ".join(f"{k}: {v}" for k, v in merged.items())
            + ")"
        )
    one = single_set(model.get("rule"), sets)
    out = [
        f"<p>Model <code>{esc(model.get('formula', response))}</code> ({esc(model.get('level_rule', ''))}), fitted by maximum likelihood to "
        f"the original and to each synthetic set, the sets combined by the rule <code>{esc(model.get('rule', '—'))}</code>. "
        f"Reference levels: {esc(reference)}. {esc(how)}. Correlation of synthetic with original coefficients: {esc(fmt(model.get('coefficient_r')))}.</p>"
    ]
    if one:
        out.append(_single_set_caveat())
    if model.get("warnings"):
        out.append(
            _p(
                "The fits warned: "
                + "; ".join(map(str, model["warnings"]))
                + " (a level with almost no records of the category gives a large, unstable coefficient).",
                "note",
            )
        )
    shown = min(len(coefs), 48)
    more = f" The first {shown} of {len(coefs)} terms are drawn; the table lists all." if shown < len(coefs) else ""
    synthetic = (
        " to the one synthetic set (blue; its interval ignores synthesis and noise variance)"
        if one
        else ", combined over the sets, to the synthetic data (blue)"
    )
    out.append(
        html_figure(
            plots.coefficient_forest(coefs, f"1[{response}]: coefficients, original and synthetic"),
            "Each coefficient (log odds ratio against the reference level) with its 95% interval: fitted to the original (black) and"
            f"{synthetic}, as in S-004 Figs. 10–14." + more,
            f"coefficient plot of the logistic regression of {response}",
            "the coefficients carry no finite estimates",
        )
    )
    out.append(html_table(_coef_header(one), [_coef_row(c) for c in coefs]))
    return "".join(out)


def _sensitive_rows(part: Mapping[str, Any]) -> list[list[str]]:
    props, ind = _mapping(part.get("proportions")), _mapping(part.get("indicators"))
    rows = []
    if math.isfinite(nanmean(props.get("r"))):
        rows.append(
            [
                "sensitive × public proportions: r",
                fmt(nanmean(props.get("r"))),
                "Correlation of the synthetic with the original shares of the cells of the sensitive × public tables (S-004 Fig. 3b); 1 = proportional.",
                "higher",
            ]
        )
    if math.isfinite(nanmean(ind.get("slope_r"))):
        rows.append(
            [
                "sensitive indicator slopes: r",
                fmt(nanmean(ind.get("slope_r"))),
                "Correlation of the synthetic with the original slopes of the other columns' indicators on a sensitive category's (S-004 Fig. 3c).",
                "higher",
            ]
        )
    return rows


# -- 8. inference --------------------------------------------------------------------------------


#: The inference section's heading, by where its models came from (the JSON's ``source``).
INFERENCE_SOURCES = {
    "given": "The model given (--formula)",
    "declared": "Models declared in the domain (analyses:)",
    "default": "Default models, chosen from the domain (no formula given, no analyses declared)",
}


def _inference(inference: Mapping[str, Any], sets: Any = None) -> str:
    models = [m for m in inference.get("models") or [] if isinstance(m, Mapping)]
    if not models:  # one model, as an evaluation without "models" holds it
        if not inference.get("coefficients"):
            return _na("no regression formula was given and the domain gives no model (pass one to compare inferences)") + (
                _left_out(inference)
            )
        return _one_model(inference, sets)
    source = str(inference.get("source") or "")
    out = [
        f"<h3>{esc(INFERENCE_SOURCES.get(source, 'Models'))}</h3>",
        _p(
            "Each model is fitted to the original and to each synthetic set; the synthetic estimates are combined by the "
            "release's rule. A model's verdict: the same conclusion when every coefficient lies within 1.96 original "
            "standard errors of the original's and no slope significant in the original is halved, doubled or reversed."
        ),
    ]
    for k, m in enumerate(models, start=1):
        why = f" — {m.get('why')}" if m.get("why") else ""
        out.append(f"<h4>{k}. <code>{esc(m.get('formula', '—'))}</code> ({esc(m.get('model', ''))}){esc(why)}</h4>")
        if m.get("error"):
            out.append(_p(f"Not compared: {m.get('error')}.", "note"))
            continue
        if "measured_for" in m:
            out.append(
                _p(
                    "The release measured every two-way marginal this model needs, as a declared analysis."
                    if m["measured_for"]
                    else "Not protected: the release did not measure this model's marginals for it (declare it in the domain's "
                    "analyses: to have privsyn, mst or aim measure them first); it holds the model's relationships only as far "
                    "as the method's own choices happened to measure them.",
                    "note",
                )
            )
        verdict = judge.inference(m, sets)
        if verdict is not None:
            same = "Same conclusion" if verdict.level == "good" else "Not the same conclusion"
            out.append(f'<p class="{esc(verdict.level)}"><strong>{esc(same)}.</strong> {esc(verdict.text)}</p>')
        out.append(_one_model(m, sets))
        out.append(_conclusions(m, single_set(m.get("rule"), sets)))
    return "".join(out) + _left_out(inference)


def _conclusions(model: Mapping[str, Any], one: bool = False) -> str:
    """Per term, the original's estimate and interval (the steward's view) beside the synthetic interval and the
    noise-aware one, each with whether it reaches the original's conclusion; for a model whose release published
    its noisy table only (``noise_aware_rule`` or ``noise_aware_error``), else nothing."""
    if "noise_aware_rule" not in model and "noise_aware_error" not in model:
        return ""
    coefs = [c for c in model.get("coefficients") or [] if isinstance(c, Mapping)]
    aware = any(isinstance(c.get("noise_aware"), Mapping) for c in coefs)
    ci = lambda part: f"[{fmt(part.get('lower'))}, {fmt(part.get('upper'))}]"
    header = ["term", "original estimate", "original 95% CI", _coef_header(one)[4], "synthetic: conclusion"]
    if aware:
        header += ["noise-aware estimate", "noise-aware 95% CI", "noise-aware: conclusion"]
    rows = []
    for c in coefs:
        o, s, a = _mapping(c.get("original")), _mapping(c.get("synthetic")), _mapping(c.get("noise_aware"))
        row = [str(c.get("term", "")), fmt(o.get("estimate")), ci(o), ci(s), _same(c, "synthetic")]
        if aware:
            row += [fmt(a.get("estimate")), ci(a), _same(c, "noise_aware")] if a else ["—", "—", "—"]
        rows.append(row)
    out = [
        _p(
            "Would an analyst reach the original's conclusion? A 95% interval's conclusion is the sign it shows: positive, "
            "negative, or unclear when it holds 0.",
        ),
        html_table(header, rows, numeric=(1, 2, 3, 5, 6)),
    ]
    if model.get("noise_aware_error"):
        out.append(_p(f"No noise-aware intervals: {model['noise_aware_error']}.", "note"))
    elif aware:
        out.append(
            _p(
                f"Noise-aware intervals: {model['noise_aware_rule']}. They count the DP noise and the sampling of the "
                "confidential data; the synthetic interval holds only as far as the synthesizer kept the relationship.",
                "note",
            )
        )
    return "".join(out)


def _same(coefficient: Mapping[str, Any], which: str) -> str:
    """Whether the ``which`` interval (``synthetic``, ``noise_aware``) reaches the original's conclusion:
    ``same (positive)`` or ``differs: positive → unclear``; '—' without both intervals."""
    said = _mapping(coefficient.get("conclusion"))
    words = []
    for part in ("original", which):
        interval = _mapping(coefficient.get(part))
        if part in said:
            words.append(str(said[part]))
        elif "lower" in interval and "upper" in interval:
            words.append(conclusion({"lower": float(interval["lower"]), "upper": float(interval["upper"])}))
        else:
            return "—"
    original, other = words
    return f"same ({original})" if other == original else f"differs: {original} → {other}"


def _left_out(inference: Mapping[str, Any]) -> str:
    left = [x for x in inference.get("left_out") or [] if isinstance(x, Mapping)]
    if not left:
        return ""
    items = "".join(f"<li>{esc(x.get('column') or x.get('analysis') or '')}: {esc(x.get('why', ''))}</li>" for x in left)
    return f'<p class="note">Left out of the models:</p><ul class="note">{items}</ul>'


def _one_model(inference: Mapping[str, Any], sets: Any = None) -> str:
    coefs = [c for c in inference.get("coefficients") or [] if isinstance(c, Mapping)]
    rule = str(inference.get("rule", "—"))
    one = single_set(rule, sets)
    response = f" It models {inference.get('response')}." if inference.get("response") else ""
    out = [
        f"<p>Model <code>{esc(inference.get('formula', '—'))}</code>, fitted to the original and to each synthetic set; the synthetic estimates are combined by the rule <code>{esc(rule)}</code>.{esc(response)}</p>"
    ]
    if one:
        out.append(_single_set_caveat())
    if inference.get("warnings"):
        out.append(_p("The fits warned: " + "; ".join(map(str, inference["warnings"])) + ".", "note"))
    shown = min(len(coefs), plots.MAX_TERMS)
    more = f" The first {shown} of {len(coefs)} terms are drawn; the table lists all." if shown < len(coefs) else ""
    synthetic = "synthetic from one set, ignoring synthesis and noise variance" if one else "synthetic"
    out.append(
        html_figure(
            plots.coefficient_plot(coefs),
            f"95% intervals per term: original (black) and {synthetic} (blue)"
            + (", noise-aware from the published table (green)" if any("noise_aware" in c for c in coefs) else "")
            + ", each term on its own scale."
            + more,
            "coefficient intervals, original and synthetic",
            "the coefficients carry no finite estimates",
        )
    )
    rows = [_coef_row(c) for c in coefs]
    out.append(html_table(_coef_header(one), rows))
    out.append(
        _p(
            "CI overlap: the average share of each interval covered by their intersection (1 = identical, 0 or less = disjoint; higher is better). Standardised difference: (synthetic − original estimate) / original standard error (closer to 0 is better).",
            "note",
        )
    )
    return "".join(out)


def _coef_header(one: bool) -> list[str]:
    """The coefficient table's header; a one-set interval says what it leaves out."""
    ci = "synthetic 95% CI (one set: ignores synthesis and noise variance)" if one else "synthetic 95% CI"
    return ["term", "original estimate", "original 95% CI", "synthetic estimate", ci, "df", "CI overlap", "std. difference"]


def _single_set_caveat() -> str:
    return (
        f'<p class="caveat"><strong>One synthetic set.</strong> {esc(SINGLE_SET_CAVEAT)} They cover the value they '
        "estimate less often than 95 %, and a high overlap with the original's interval flatters the release; several "
        "sets (--sets m) give intervals that carry both variances.</p>"
    )


def _coef_row(c: Mapping[str, Any]) -> list[str]:
    o, s = _mapping(c.get("original")), _mapping(c.get("synthetic"))
    ci = lambda part: f"[{fmt(part.get('lower'))}, {fmt(part.get('upper'))}]"
    return [
        str(c.get("term", "")),
        fmt(o.get("estimate")),
        ci(o),
        fmt(s.get("estimate")),
        ci(s),
        fmt(s.get("df")),
        fmt(c.get("ci_overlap")),
        fmt(c.get("std_diff")),
    ]


# -- page and file -------------------------------------------------------------------------------

CSS = """
:root { --ink: #1d1d1f; --muted: #5b5b62; --line: #d9d9df; --accent: #0b5394; --box: #f2f6fb; }
* { box-sizing: border-box; }
html { font-size: 15px; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.5;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 62rem; margin: 0 auto; padding: 1.5rem 1.5rem 4rem; }
h1 { font-size: 1.75rem; margin: 0 0 .2rem; }
h2 { font-size: 1.35rem; margin: 2.6rem 0 .8rem; padding-bottom: .2rem; border-bottom: 2px solid var(--accent); }
h3 { font-size: 1.08rem; margin: 1.8rem 0 .5rem; }
p { margin: .5rem 0; max-width: 48rem; }
.sub, .note, figcaption, caption { color: var(--muted); font-size: .9rem; }
nav.toc { display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; margin: .8rem 0 1.2rem; font-size: .92rem; }
nav.toc a { color: var(--accent); text-decoration: none; }
nav.toc a:hover { text-decoration: underline; }
section.privacy { background: var(--box); border: 2px solid var(--accent); border-radius: 8px; padding: .2rem 1.4rem 1rem; }
section.privacy h2 { margin-top: .8rem; }
.headline { font-size: 1.05rem; }
.guarantee { font-size: 1.3rem; font-weight: 650; color: var(--accent); margin: .6rem 0 1rem; }
dl.statement { display: grid; grid-template-columns: minmax(9rem, max-content) 1fr; gap: .35rem 1.2rem; margin: 0; }
dl.statement dt { font-weight: 600; }
dl.statement dd { margin: 0; }
dl.statement ul { margin: 0; padding-left: 1.1rem; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; margin: .6rem 0 1rem; font-size: .88rem; font-variant-numeric: tabular-nums; }
caption { text-align: left; caption-side: bottom; padding-top: .3rem; }
th, td { padding: .3rem .55rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f4f4f7; font-weight: 600; }
section.privacy th { background: #e3ebf5; }
#inference td:first-child, #sensitive td:first-child { white-space: nowrap; }
table.compact { width: auto; min-width: 24rem; }
td.num, th.num { text-align: right; }
td.num { white-space: nowrap; }
#summary td:first-child { min-width: 10rem; font-weight: 600; }
#summary td:nth-child(2) { min-width: 9rem; }
#summary td:nth-child(3) { color: #3a3a40; }
#summary table:not(.verdicts) td:last-child { white-space: nowrap; }
#summary table.verdicts td:nth-child(2) { min-width: 6rem; }
.value { display: block; font-size: 1.05rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.detail { display: block; color: var(--muted); font-size: .82rem; }
figure { margin: 1rem 0 1.4rem; }
figure img { display: block; max-width: 100%; height: auto; }
figcaption { margin-top: .3rem; max-width: 48rem; }
.pair { display: flex; flex-wrap: wrap; gap: 1rem; }
.pair figure { flex: 1 1 24rem; margin: .5rem 0; }
.caveat { margin: 1rem 0; padding: .6rem 1rem; border-left: 4px solid #E69F00; background: #fff7e8; }
.banner { margin: 0 0 1.6rem; padding: .8rem 1.1rem; border: 2px solid #B03A2E; border-radius: 6px; background: #fdecea; font-size: 1rem; max-width: none; }
.banner strong { color: #8E1B10; }
.verdict { margin: .4rem 0 1rem; padding: .55rem .9rem; border-left: 6px solid; border-radius: 3px; max-width: none; }
.verdict.good { border-color: #009E73; background: #e9f6f1; }
.verdict.caution { border-color: #E69F00; background: #fff7e8; }
.verdict.poor { border-color: #D55E00; background: #fdeee6; }
table.verdicts td.level { white-space: nowrap; font-weight: 650; }
table.verdicts tr.good td.level { color: #00704f; }
table.verdicts tr.caution td.level { color: #8a5d00; }
table.verdicts tr.poor td.level { color: #a84400; }
.headline-model { background: var(--box); padding: .5rem .8rem; border-radius: 4px; max-width: none; }
dl.params { display: grid; grid-template-columns: minmax(7rem, max-content) 1fr; gap: .15rem 1rem; margin: .2rem 0; }
dl.params dt { font-weight: 600; color: #3a3a40; }
dl.params dd { margin: 0; overflow-wrap: anywhere; }
ol.params, ul.params { margin: 0; padding-left: 1.4rem; }
ul.inline { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .1rem 1.1rem; }
ul.inline .k { color: var(--muted); }
.params-block { font-size: .9rem; }
table.records { font-size: .82rem; }
table.records th, table.records td:not(:last-child) { white-space: nowrap; }
ol.params { column-width: 16rem; column-gap: 2rem; }
.na { color: var(--muted); font-style: italic; }
details.fold { margin: .5rem 0; }
details.fold > summary { cursor: pointer; font-weight: 600; padding: .2rem 0; }
details.fold[open] > summary { margin-bottom: .4rem; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .9em; overflow-wrap: anywhere; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; }
@media print {
  @page { size: A4; margin: 14mm 12mm; }
  html { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  nav.toc { display: none; }
  section { break-before: page; }
  section.privacy { break-before: auto; }
  section.privacy, .caveat, .banner, .verdict, th { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  h2, h3 { break-after: avoid; }
  figure, tr, dl.statement, .caveat, .banner, .verdict, .keep { break-inside: avoid; }
  figure img { max-width: 100%; max-height: 235mm; }
  .scroll { overflow: visible; }
  details.fold::details-content { content-visibility: visible; display: block; }  /* printed open where supported */
  a { color: inherit; text-decoration: none; }
}
"""


def html_page(title: str, header: str, body: str) -> str:
    from ..version import __version__

    footer = f"<footer>Written by dipsy {esc(__version__)}. Figures and tables compare the original data with the synthetic sets; this report itself contains statistics of the original data and is not covered by the release's privacy guarantee: do not publish it.</footer>"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{header}{body}{footer}</main></body></html>\n"
    )


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes the file private; a report is meant to be read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
