"""Several releases of one column side by side: the steward's choice between methods.

:func:`compare_releases` reads the original data once and every release folder given, and for the
chosen integer or numeric column reports per release its guarantee (kind and amounts, as its
``release.json`` states them), the ECDF utility ``U_m`` and ``U_a`` of every set
(:func:`.numeric.ecdf_distances`), the mean and the quantiles. :func:`write_comparison` renders
that as one self-contained HTML page with the overlaid ECDFs.

Guarantees of different kinds are shown, never ranked: a local ε_x (the pseudo-posterior
mechanism) bounds the privacy loss for this data set only, a DP ε for every data set, so the two
numbers are not on one scale. Like :func:`~dipsy.evaluation.evaluate`, the comparison reads the
confidential original and is itself not private.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Column
from ..errors import DipsyError
from . import plots
from .missing import value_numbers
from .numeric import QUANTILES, ecdf_distances


def compare_releases(original: pd.DataFrame | str | Path, releases: Sequence[str | Path], column: str) -> dict[str, Any]:
    """ECDF utility, means and quantiles of ``column`` in each release, with each one's guarantee.

    Parameters
    ----------
    original
        The confidential data (DataFrame or CSV/Parquet path) every release was made from.
    releases
        Release folders written by ``dipsy synth`` (record releases holding ``column``).
    column
        An integer or numeric column of every release's domain.

    Returns
    -------
    dict
        ``{"column", "quantiles", "original": {"n", "mean", "quantiles"}, "releases": [...]}``;
        each release entry holds ``folder``, ``method``, ``release_id``, ``kind`` (``"dp"``,
        ``"local"`` or ``"test release"``), ``guarantee`` (one line), ``neighbouring`` (its
        relation), ``rows`` (per set) and ``on_invalid`` (as its release.json records them), ``sets`` and,
        per set, ``U_m``, ``U_a``, ``mean`` and ``quantiles``, with ``U_m_mean`` and ``U_a_mean``;
        ``"notes"``: what differs between the releases besides their method and budget (their
        neighbouring relations, or the rows they were made from), each a sentence.
    """
    x, loaded = load_column(original, releases, column)
    return summarise(x, loaded, column)


def load_column(
    original: pd.DataFrame | str | Path, releases: Sequence[str | Path], column: str
) -> tuple[np.ndarray, list[tuple[Path, dict, list[np.ndarray]]]]:
    """The original's values of ``column`` and each release's (folder, release.json, values per set), read once."""
    from . import load_release, read_original

    if not releases:
        raise DipsyError("compare needs at least one release folder", "pass the --out folders of 'dipsy synth'")
    loaded = [(Path(r), *load_release(r)) for r in releases]
    domain = loaded[0][3]
    if column not in domain:
        raise DipsyError(
            f"the release {str(loaded[0][0])!r} does not hold the column {column!r}", f"name one of {list(domain.names)}"
        )
    if domain[column].kind not in ("integer", "numeric"):
        raise DipsyError(
            f"{column!r} is {domain[column].kind}: compare measures integer and numeric columns",
            "name an integer or numeric column; 'dipsy evaluate' compares categorical ones",
        )
    x = _column(read_original(original, domain.project([column])), domain[column])
    out = []
    for folder, meta, tables, dom in loaded:
        if column not in dom or dom[column] != domain[column]:
            raise DipsyError(
                f"the release {str(folder)!r} declares {column!r} differently from {str(loaded[0][0])!r} (or not at all)",
                "compare releases made with the same domain for this column",
            )
        out.append((folder, meta, [_column(t, domain[column]) for t in tables]))
    return x, out


def summarise(x: np.ndarray, loaded: Sequence[tuple[Path, dict, list[np.ndarray]]], column: str) -> dict[str, Any]:
    """The comparison's numbers from :func:`load_column`'s values."""
    from . import stated  # the package imports this module: read at call time

    out: dict[str, Any] = {
        "column": column,
        "quantiles": list(QUANTILES),
        "original": {"n": int(x.size), "mean": float(x.mean()), "quantiles": _quantiles(x)},
        "releases": [],
    }
    for folder, meta, ys in loaded:
        ecdf = [ecdf_distances(x, y) for y in ys]
        out["releases"].append(
            {
                "folder": str(folder),
                "method": meta.get("method"),
                "release_id": meta.get("release_id"),
                **_guarantee(meta.get("privacy") or {}),
                "neighbouring": stated(meta.get("privacy") or {}, "neighbouring"),
                "rows": meta.get("rows"),
                "on_invalid": meta.get("on_invalid"),
                "sets": len(ys),
                "U_m": [u for u, _ in ecdf],
                "U_a": [a for _, a in ecdf],
                "U_m_mean": float(np.mean([u for u, _ in ecdf])),
                "U_a_mean": float(np.mean([a for _, a in ecdf])),
                "mean": [float(y.mean()) for y in ys],
                "quantiles": [_quantiles(y) for y in ys],
            }
        )
    out["notes"] = _differences(out["releases"])
    return out


def _differences(releases: Sequence[Mapping[str, Any]]) -> list[str]:
    """Sentences for what the releases differ in besides method and budget: their relations (a
    substitute ε and an add/remove ε are not on one scale) and the rows of the original they were
    made from (one dropped the rows outside the domain, another did not). The sets' own sizes may
    differ anyway (a noisy n under add/remove), and are not noted.

    >>> _differences([{"folder": "a", "neighbouring": "add/remove", "rows": [10], "on_invalid": "stop"},
    ...               {"folder": "b", "neighbouring": "substitute", "rows": [9], "on_invalid": "drop"}])[1]
    'The releases were not all made from the same rows of the original: a: stop; b: drop.'
    """
    notes = []
    relations = {str(r.get("neighbouring")) for r in releases}
    if len(relations) > 1:
        each = "; ".join(f"{Path(str(r['folder'])).name}: {r.get('neighbouring')}" for r in releases)
        notes.append(
            "The releases are private under different neighbouring relations, so their budgets are not on one scale "
            f"(under substitution one record's change counts as a removal and an addition): {each}."
        )
    policies = {str(r.get("on_invalid")) for r in releases}
    if len(policies) > 1:  # one dropped the rows outside the domain, another stopped on them (or read them otherwise)
        each = "; ".join(f"{Path(str(r['folder'])).name}: {r.get('on_invalid')}" for r in releases)
        notes.append(f"The releases were not all made from the same rows of the original: {each}.")
    return notes


def _column(frame: pd.DataFrame, column: Column) -> np.ndarray:
    """The finite numbers of ``column``, its declared missing states left out (a −8 is no number)."""
    values = value_numbers(frame[column.name], column)
    values = values[np.isfinite(values)]
    if not values.size:
        raise DipsyError(f"no value of {column.name!r} is a number", "check the release and the data")
    return values


def _quantiles(values: np.ndarray) -> list[float]:
    return [float(q) for q in np.quantile(values, QUANTILES)]


_SYMBOLS = (("epsilon", "ε"), ("delta", "δ"), ("rho", "ρ"))


def _guarantee(privacy: Mapping[str, Any]) -> dict[str, Any]:
    """The release's guarantee kind and a one-line statement of its amounts."""
    if privacy.get("differentially_private") is False and "if_unseeded" in privacy:
        return {"kind": "test release", "guarantee": "none: a seeded test release (not private)"}
    amounts = ", ".join(f"{s} = {privacy[k + '_total']:.4g}" for k, s in _SYMBOLS if privacy.get(k + "_total") is not None)
    if privacy.get("definition") == "local":
        return {
            "kind": "local",
            "guarantee": f"local, for this data set only (not DP): {amounts.replace('ε', 'ε_x')}",
            "epsilon": privacy.get("epsilon_total"),
        }
    return {
        "kind": "dp",
        "guarantee": f"{privacy.get('definition', '?')}: {amounts}",
        "epsilon": privacy.get("epsilon_total"),
        "delta": privacy.get("delta_total"),
        "rho": privacy.get("rho_total"),
    }


def write_comparison(
    result: Mapping[str, Any], x: np.ndarray, loaded: Sequence[tuple[Path, dict, list[np.ndarray]]], path: str | Path
) -> Path:
    """Write the comparison page (table and overlaid ECDFs) to ``path`` atomically, from
    :func:`load_column`'s values and :func:`summarise`'s numbers."""
    from .report import esc, fmt, html_figure, html_page, html_table, write_atomic

    name = result["column"]
    curves = [(f"{r['method']} ({Path(r['folder']).name})", ys) for r, (_, _, ys) in zip(result["releases"], loaded)]
    rows = [
        [
            "original",
            "—",
            "—",
            "—",
            "—",
            fmt(result["original"]["mean"], 4),
            " / ".join(fmt(q, 4) for q in result["original"]["quantiles"]),
        ]
    ]
    for r in result["releases"]:
        q = np.mean(r["quantiles"], axis=0)
        rows.append(
            [
                f"{r['method']} ({Path(r['folder']).name})",
                r["guarantee"],
                str(r["sets"]),
                fmt(r["U_m_mean"], 3),
                fmt(r["U_a_mean"], 4),
                fmt(float(np.mean(r["mean"])), 4),
                " / ".join(fmt(v, 4) for v in q),
            ]
        )
    levels = " / ".join(f"{p:g}" for p in result["quantiles"])
    local = any(r["kind"] == "local" for r in result["releases"])
    body = [
        "<p>Each release of the column, against the original, averaged over its synthetic sets. "
        "U_m is the largest gap between the ECDFs (the Kolmogorov–Smirnov distance) and U_a the mean squared gap "
        "over the pooled values (Hu, Savitsky &amp; Williams); both are 0 for identical samples, smaller is better.</p>",
    ]
    if local:
        body.append(
            '<blockquote class="caveat"><strong>Guarantees of different kinds.</strong> A local ε_x bounds the '
            "privacy loss for the records of this data set and its stated neighbours only; a DP ε bounds it for "
            "every data set. The numbers are not on one scale: read each release's statement before comparing.</blockquote>"
        )
    for note in result.get("notes") or []:
        body.append(f'<blockquote class="caveat"><strong>Not alike.</strong> {esc(note)}</blockquote>')
    body.append(
        html_table(["release", "guarantee", "sets", "U_m", "U_a", "mean", f"quantiles {levels}"], rows, numeric=range(2, 7))
    )
    body.append(
        html_figure(
            plots.release_ecdfs(x, curves, name),
            f"ECDF of {name}: the original (black, dashed) and each release, its first set bold and its other sets thin.",
            f"ECDFs of {name} in the original and each release",
        )
    )
    page = html_page(
        f"Releases of {name} compared",
        f"<header><h1>Releases of {esc(name)} compared</h1></header>",
        "<section>" + "".join(body) + "</section>",
    )
    return write_atomic(Path(path), page)
