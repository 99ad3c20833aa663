"""Utility evaluation of a release against the original data, and its HTML report.

:func:`evaluate` gathers every metric into one JSON-ready dict (what ``metrics.json`` holds and
what :func:`~dipsy.evaluation.report.write_report` renders). It reads the confidential original:
the evaluation is for the data steward's decision to publish, and is itself not private.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pyarrow import ArrowException

from ..domain import Domain
from ..domain.codec import numbers, states
from ..engine.agency import is_agency, read_frame
from ..errors import DataError, DipsyError
from ..formula import parse
from ..privacy.published import PublishedTable
from ..release import Release
from ..release_sets import read_set
from .groups import grouped_kmarginal
from .marginals import encode_valid, kway_marginals
from .missing import missing_shares, value_numbers, without_states
from .numeric import numeric_summary
from .propensity import pmse_all
from .regressions import compare_models, regression
from .relationships import relationships_section
from .rules import rule_breaks
from .sdnist import sdnist_kmarginal
from .sensitive import sensitive_utility
from .verdicts import verdicts as section_verdicts  # the name "verdicts" stays the module
from .yardsticks import two_way_yardsticks


def load_release(release: Release | str | Path) -> tuple[dict[str, Any], list[pd.DataFrame], Domain]:
    """release.json, the synthetic sets and the domain, from a Release or its folder."""
    if isinstance(release, Release):
        return release.metadata(), release.tables, release.domain
    folder = Path(release)
    if not folder.is_dir():
        raise DataError(
            f"the release folder {str(folder)!r} does not exist" if not folder.exists() else f"{str(folder)!r} is not a folder",
            "pass the --out folder of 'dipsy synth'",
        )
    try:
        meta = json.loads((folder / "release.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:  # a JSON or UTF-8 error is a ValueError
        why = getattr(e, "strerror", None) or str(e).splitlines()[0]
        raise DataError(
            f"{str(folder)!r} is not a dipsy release folder (release.json: {why})", "pass the --out folder of 'dipsy synth'"
        ) from None
    sets = meta.get("sets") if isinstance(meta, dict) else None
    if isinstance(sets, bool) or not isinstance(sets, int) or not 1 <= sets <= 100_000:
        raise DataError(
            f"the release.json in {str(folder)!r} does not say how many sets it holds",
            "pass the --out folder of 'dipsy synth', as it wrote it",
        )
    domain = Domain.load(folder / "domain.yaml")
    if meta.get("release") == "table":
        raise DipsyError(
            "evaluate compares records, and this release is a table", "evaluate a release made with --release records"
        )
    tables = []
    for k in range(1, sets + 1):
        path = next(iter(sorted(folder.glob(f"synthetic_{k}.*"))), None)
        if path is None and (folder / f"synthetic_{k}").is_dir():
            path = folder / f"synthetic_{k}"  # a set written in chunks: read (and checked) part by part
        if path is None:
            raise DataError(f"the release folder {str(folder)!r} has no synthetic_{k} file", "pass a complete release folder")
        try:
            if path.is_dir():
                tables.append(pd.concat(list(read_set(path, domain)), ignore_index=True))
            else:
                tables.append(read_table(path))
        except (OSError, ValueError, ArrowException) as e:  # ArrowInvalid, ParserError, EmptyDataError, UnicodeDecodeError
            why = getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0]
            raise DataError(
                f"the release file {str(path)!r} cannot be read ({why})",
                "the release is damaged: write it again with 'dipsy synth', or restore the folder",
            ) from None
        missing = [n for n in domain.names if n not in tables[-1].columns]
        if missing:
            raise DataError(
                f"the release file {str(path)!r} lacks the column(s) {', '.join(map(repr, missing))} of its domain",
                "the release is damaged: write it again with 'dipsy synth', or restore the folder",
            )
    return meta, tables, domain


def read_table(path: Path) -> pd.DataFrame:
    """A data file or a released set, whole: Parquet, CSV, or an agency file (SAS, Stata, SPSS),
    read as the engines read it (:func:`dipsy.engine.agency.read_frame`: codes, not their labels;
    SPSS's declared missing values as the codes they are)."""
    if is_agency(path):
        return read_frame(path)
    return pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq") else pd.read_csv(path)


def read_original(data: pd.DataFrame | str | Path, domain: Domain) -> pd.DataFrame:
    """The original records of the released columns that match the domain."""
    if not isinstance(data, pd.DataFrame):
        path = Path(data)
        try:
            data = read_table(path)
        except (OSError, ValueError, ArrowException) as e:
            why = getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0]
            raise DataError(
                f"cannot read {str(path)!r} ({why})", "pass the original CSV, Parquet, SAS, Stata or SPSS file"
            ) from None
        if data.columns.duplicated().any():
            dupes = sorted({str(c) for c in data.columns[data.columns.duplicated()]})
            raise DataError(
                f"{str(path)!r} names the column(s) {', '.join(map(repr, dupes))} more than once",
                "give each column of the data a distinct name",
            )
    _refuse_infinite(data, domain)
    _, valid = encode_valid(data, domain, "the original")
    kept = data.loc[valid, list(domain.names)].reset_index(drop=True)
    for column in domain.columns:
        if column.clip:  # as the release's measurements saw them: top- and bottom-coded, ±inf too
            clipped = numbers(kept[column.name], column)
            if column.missing is None:
                kept[column.name] = clipped
            else:  # a missing state (-8 below the bounds) is matched before clipping: kept as it is
                kept[column.name] = kept[column.name].where(states(kept[column.name], column) >= 0, pd.Series(clipped))
    return kept


#: The rows an error about infinite values names (then how many more there are).
ROWS_SHOWN = 5


def _refuse_infinite(data: pd.DataFrame, domain: Domain) -> None:
    """Refuse an original with ±inf in an integer or numeric column that is not clipped: the means,
    correlations and regressions of the metrics would be inf or NaN (a clipped column's ±inf is
    top- or bottom-coded, as the domain declares)."""
    for column in domain.columns:
        if column.is_categorical or column.clip or column.name not in data.columns:
            continue
        values = value_numbers(data[column.name], column)
        rows = np.flatnonzero(np.isinf(values)) + 1
        if rows.size:
            shown = ", ".join(map(str, rows[:ROWS_SHOWN])) + (
                f" and {rows.size - ROWS_SHOWN:,} more" if rows.size > ROWS_SHOWN else ""
            )
            raise DataError(
                f"the original's column {column.name!r} holds infinite values in {rows.size:,} row(s) (data rows {shown}, "
                "counting the first row below the header as 1): the metrics need finite numbers",
                "remove those rows or write the values as missing, or declare the column clip: true in the "
                "domain if they stand for values beyond its bounds",
            )


def evaluate(
    original: pd.DataFrame | str | Path,
    release: Release | str | Path,
    domain: Domain | str | Path | None = None,
    formula: str | None = None,
    model: str | None = None,
    seed: int = 0,
    sensitive: list[str] | str | None = None,
    groups: Sequence[str] | None = None,
    group_k: int = 3,
    report: str | Path | None = None,
) -> dict[str, Any]:
    """Every utility metric of ``release`` against ``original``, as a JSON-ready dict.

    Parameters
    ----------
    original
        The confidential data (DataFrame or CSV/Parquet path).
    release
        A :class:`~dipsy.release.Release` or the folder ``dipsy synth`` wrote.
    domain
        The public domain; default the release's own ``domain.yaml``.
    formula
        A regression to compare, written as for statsmodels, e.g. ``"Expenditure ~ Income + C(Race)"``
        (read by the grammar of :mod:`dipsy.formula`, never run as Python). Without one, the
        inference section compares the analyses the domain declares (``analyses:``), else default
        models chosen from the domain alone (:func:`.regressions.choose_models`).
    model
        ``"ols"`` or ``"logit"`` for ``formula``; default a logit when its response is a column of
        two categories (its second category modelled), else OLS.
    seed
        Seed of the metrics' own sampling (3-way marginals, subsamples, CART permutations, the
        pMSE's independent-columns shuffle and the binning floor's redraw inside the bins).
    sensitive
        Sensitive columns to judge against the public ones (S-004 §6's outputs, key
        ``"sensitive"``, see :func:`.sensitive.sensitive_utility`), each a name or
        ``"name=level"`` naming the category its logistic regression models (``"sex=Female"``);
        default the release's own (``parameters.sensitive``, as ``rdt`` records them, with
        ``parameters.public_columns`` as the public ones), else the key holds None.
    groups
        Group columns (e.g. ``["PUMA"]``): the marginals section then adds ``"sdnist"``, SDNist
        2.x's k-marginal score, whole-file and per group, with its subsample baselines
        (:func:`.sdnist.sdnist_kmarginal`), and ``"by_group"``, dipsy's ``group_k``-way score
        inside each group (:func:`.groups.grouped_kmarginal`), with the worst groups.
    group_k
        The order of the marginals scored inside each group (default 3).
    report
        An HTML file to write the report to as well (``dipsy evaluate --report``), written
        atomically; like the metrics, it reads the original, so keep it with the confidential data.
        Refused before any work where it would overwrite the original, the domain file, a file of
        the release or a budget ledger (:func:`dipsy.paths.check_outputs`).

    Returns
    -------
    dict
        ``"release"``, ``"privacy"``, ``"dataset"``, one key per section (``"marginals"``,
        ``"numeric"``, ``"propensity"``, ``"relationships"``, ``"inference"``, ``"sensitive"``,
        ``"inference"``: the models compared, :func:`.regressions.compare_models`;
        ``"missing"``: the shares of each declared missing state, :func:`.missing.missing_shares`;
        ``"rules"``: the records breaking each of the domain's edit rules, :func:`.rules.rule_breaks`)
        and ``"verdicts"``: per section with one, ``{"level", "text"}`` (:mod:`.verdicts`). The
        numeric metrics and the regression leave out the rows of a column in a declared missing
        state (a code such as −8 is no number).
    """
    if formula is not None:
        parse(formula)  # a formula that cannot be read is refused before any work
    if report is not None:  # as `dipsy evaluate --report`: never over an input, the release or a ledger
        from ..paths import check_outputs
        from ..privacy.known import protected_ledgers

        file = lambda x: x if isinstance(x, (str, Path)) else None  # noqa: E731 - a DataFrame or Release has no path
        check_outputs(
            {"report=": report},
            {"the original data": file(original), "the domain file": file(domain)},
            folders={"the release": file(release)},
            ledgers=protected_ledgers(),
        )
    meta, tables, release_domain = load_release(release)
    if domain is None:
        domain = release_domain
    elif not isinstance(domain, Domain):
        domain = Domain.load(domain)
    declared = domain.analyses
    domain = domain.project([n for n in release_domain.names if n in domain])
    dropped = [a for a in declared if a not in domain.analyses]  # analyses naming a column not released
    orig = read_original(original, domain)
    out = {
        "release": meta,
        "privacy": meta["privacy"],
        "dataset": {
            "rows_original": len(orig),
            "sets": len(tables),
            "rows_synthetic": [len(t) for t in tables],
            "columns": list(domain.names),
        },
        "marginals": kway_marginals(orig, tables, domain, seed=seed, repeated=repeated_columns(meta))
        | {"yardsticks": two_way_yardsticks(orig, tables, domain, meta["privacy"], seed, repeated_columns(meta))}
        | (
            {
                "sdnist": sdnist_kmarginal(orig, tables, domain, list(groups), seed=seed),
                "by_group": grouped_kmarginal(orig, tables, domain, list(groups), k=group_k, seed=seed),
            }
            if groups
            else {}
        ),
        "numeric": numeric_summary(orig, tables, domain, seed=seed, privacy=meta["privacy"]),
        "propensity": pmse_all(orig, tables, domain, seed=seed),
        "relationships": relationships_section(orig, tables, domain, seed=seed)
        | ({"protected": protected_pairs(meta)} if meta.get("method") in SELECTING else {}),
        "inference": _inference(orig, tables, domain, meta, formula, model, dropped, seed),
        "sensitive": _sensitive(orig, tables, domain, meta, sensitive, seed),
        "missing": missing_shares(orig, tables, domain),
        "rules": rule_breaks(orig, tables, domain),
    }
    # One sentence per section with its threshold (the report shows the same ones).
    out["verdicts"] = {k: v.to_dict() for k, v in section_verdicts(out).items()}
    if report is not None:
        from .report import write_report  # the plots' matplotlib loads only for a report

        write_report(out, orig, tables, domain, report)
    return out


def repeated_columns(meta: dict) -> list[str]:
    """The columns a release repeats as they are: the public columns its relation names (rdt's
    targets, the pseudo-posterior's predictors); none for a relation that leaves no column public.

    >>> repeated_columns({"privacy": {"relation": {"kind": "substitute-values", "public": ["age"]}}})
    ['age']
    """
    relation = stated(meta.get("privacy") or {}, "relation") or {}
    return [str(c) for c in relation.get("public") or []] if isinstance(relation, dict) else []


def stated(privacy: dict, key: str) -> Any:
    """A field of a release's privacy statement; a seeded test release's from the statement it
    would have unseeded (``if_unseeded``)."""
    return privacy.get(key) or (privacy.get("if_unseeded") or {}).get(key)


def _inference(
    orig: pd.DataFrame,
    tables: list[pd.DataFrame],
    domain: Domain,
    meta: dict,
    formula: str | None,
    model: str | None,
    dropped: Sequence[Any],
    seed: int = 0,
) -> dict | None:
    """The inference section (:func:`.regressions.compare_models`): the formula given, else the
    domain's declared analyses, else default models chosen from the domain and the release's
    ``parameters.sensitive``. A declared missing state is no number and no level: the regressions
    leave its rows out. The models whose table the release publishes (``published``) get
    noise-aware intervals too."""
    given = meta.get("parameters")
    params = given if isinstance(given, dict) else {}
    sensitive = [c.partition("=")[0].strip() for c in _names(params.get("sensitive"))]
    section = compare_models(
        without_states(orig, domain),
        [without_states(t, domain) for t in tables],
        domain,
        meta.get("combining_rule"),
        formula,
        model,
        sensitive,
        dropped,
        [PublishedTable.from_dict(t) for t in meta.get("published") or []],
        seed,
    )
    if section is not None and meta.get("method") in SELECTING:
        for m in section.get("models") or []:
            m["measured_for"] = measured_for(m.get("formula"), params)
    return section


#: The methods whose relationships are those their data-driven choices measured, unless declared
#: analyses had them measured first: for these the evaluation says which relationships are protected.
#: (A full-table method measures every relationship; a model-based one holds what its model holds.)
SELECTING = ("privsyn", "mst", "aim", "dpsyn")


def protected_pairs(meta: dict) -> list[list[str]]:
    """The pairs of columns the release measured as declared analyses (``parameters.declared_pairs``,
    and every pair within ``declared_tables``), each once: the relationships it protects. Every other
    relationship it holds only as far as the method's own choices measured it.

    >>> protected_pairs({"parameters": {"declared_pairs": [["y", "x"]], "declared_tables": [["y", "x", "z"]]}})
    [['y', 'x'], ['y', 'z'], ['x', 'z']]
    """
    given = meta.get("parameters")
    params = given if isinstance(given, dict) else {}
    found: list[list[str]] = []
    tables = [p for p in params.get("declared_pairs") or [] if isinstance(p, (list, tuple))]
    tables += [t for t in params.get("declared_tables") or [] if isinstance(t, (list, tuple))]
    for table in tables:
        for a, b in itertools.combinations([str(c) for c in table], 2):
            if [a, b] not in found and [b, a] not in found:
                found.append([a, b])
    return found


def measured_for(formula: Any, parameters: dict) -> bool:
    """Whether the release measured every two-way marginal the model needs as a declared analysis
    (``parameters.declared_pairs``, as privsyn, mst and aim record them): otherwise the release holds
    the model's relationships only as far as its data-driven choices happened to measure them.

    >>> measured_for("y ~ a + C(b)", {"declared_pairs": [["y", "a"], ["y", "b"]]}), measured_for("y ~ a", {})
    (True, False)
    """
    from ..domain.analyses import Analysis, declared_pairs

    try:
        needed = declared_pairs([Analysis(str(formula))])
    except DipsyError:
        return False
    measured = {frozenset(p) for p in parameters.get("declared_pairs") or [] if isinstance(p, (list, tuple))}
    return bool(needed) and all(frozenset(p) in measured for p in needed)


def _sensitive(
    orig: pd.DataFrame, tables: list[pd.DataFrame], domain: Domain, meta: dict, sensitive: list[str] | str | None, seed: int
) -> dict | None:
    """The sensitive-attribute section, for the columns asked or the release's own sensitive ones."""
    given = meta.get("parameters")
    params = given if isinstance(given, dict) else {}
    asked = _names(sensitive)
    # the release's own, as far as the evaluated domain holds them (--domain may leave some out)
    chosen = asked or [c for c in _names(params.get("sensitive")) if c.partition("=")[0] in domain]
    if not chosen:
        return None
    levels = {}
    for i, item in enumerate(chosen):
        name, _, level = item.partition("=")
        chosen[i] = name.strip()
        if level.strip():
            levels[chosen[i]] = level.strip()
    unknown = [c for c in chosen if c not in domain]
    if unknown:
        raise DipsyError(
            f"--sensitive names {unknown[0]!r}, which the release does not hold", f"name columns of {list(domain.names)}"
        )
    public = None if asked else [c for c in _names(params.get("public_columns")) if c in domain] or None
    if not asked and not [c for c in (public or domain.names) if c not in chosen]:
        return None  # the release's sensitive columns, evaluated without any public one
    return sensitive_utility(orig, tables, domain, chosen, public, meta.get("combining_rule"), seed, levels)


def _names(value: Any) -> list[str]:
    """Column names from a list or a comma-separated text (as an option gives them)."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)):
        return []
    return [str(v).strip() for v in value if str(v).strip()]


def jsonable(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None (strict JSON has neither).

    >>> jsonable({"a": [1.0, float("nan")], "b": float("inf")})
    {'a': [1.0, None], 'b': None}
    """
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


__all__ = ["evaluate", "jsonable", "load_release", "read_original", "regression"]
