r"""The end-to-end privacy audit: the real release path, run many times on neighbouring data.

For each registered method, :data:`CASES` holds a pair of neighbouring tiny data sets chosen as a
worst case under the method's *own* relation (one record moved out of a cell that holds it alone,
under substitution; one record more, under add/remove), with the method's options. The audit runs
:func:`dipsy.api._release` — validation, plan, session, measurements, post-processing, exactly what
``dipsy synth`` runs, with a fresh seed per run and no ledger — ``runs`` times on each data set,
and turns each release into a vector of cell counts (the released table, or the released records
counted over the domain's cells).

The events are ``{count_k >= t}`` and ``{count_k <= t}`` for every cell ``k`` and threshold ``t``.
One half of the runs picks the event and the direction with the largest empirical log ratio; the
other half estimates it (so the choice does not bias the bound). With ``k₁`` of ``N`` runs on
``D`` and ``k₀`` of ``N`` on ``D'`` in the event, the bound is

    ε_lower = log( (CP_lower(k₁, N) − δ) / CP_upper(k₀, N) ),

Clopper & Pearson (1934) intervals at ``α/2`` each, so the bound holds with probability ``1 − α``
(α = 0.05): an ε-DP (or (ε, δ)-DP) release satisfies ``P[E | D] <= e^ε P[E | D'] + δ`` for every
event, so ``ε_lower > ε`` refutes the claim (Ding, Wang, Wang, Zhang & Kifer 2018; Jagielski,
Ullman & Oprea 2020). For a zCDP method the claim is the (ε, δ) its statement gives.

It is a lower bound: it can refute a claim, never prove one. Its power is shown on the broken
variants: every measurement's mechanism weakened to half its noise scale (or half its prior
strength) through the release path's ``tamper`` hook, while the statement still claims the
original ε — the audit must flag those (``tests/test_audit_e2e.py``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy import stats

from ..domain import Column, Domain, encode_frame

#: The family-wise error of a bound: each Clopper–Pearson interval at α/2.
ALPHA = 0.05


@dataclass(frozen=True)
class Case:
    """A worst-case neighbouring pair for one method, and how to run it."""

    method: str
    domain: Domain
    data: pd.DataFrame
    neighbour: pd.DataFrame
    kwargs: dict[str, Any]
    why: str
    files: dict[str, pd.DataFrame] = field(default_factory=dict)  # public input files an option names
    cells: Domain | None = None  # the cells released records are counted over (default: the domain's)


def _frame(**columns) -> pd.DataFrame:
    return pd.DataFrame(columns)


BINARY = Domain.from_sizes({"x": 2})
CATEGORICAL = Domain((Column("x", "categorical", categories=(0, 1)),))
MOVED = (_frame(x=[0]), _frame(x=[1]))  # n = 1: the record moves from cell 0 to cell 1
ADDED = (_frame(x=[1]), _frame(x=[0, 1]))  # one record more, in cell 0
NUMERIC = Domain((Column("v", "numeric", lower=0.0, upper=1.0, bins=(0.0, 0.5, 1.0)),))
#: Cells that tell the exponential ECDF's grid points 0, 0.5 and 1 apart.
GRID_CELLS = Domain((Column("v", "numeric", lower=0.0, upper=1.0, bins=(0.0, 0.25, 0.75, 1.0)),))
PAIRS = Domain.from_sizes({"x": 2, "y": 2})

#: Methods the audit does not run, and why: only local guarantees (definition ``local``), which
#: claim no worst-case bound for the audit to refute — their ε_x holds for one data set, computed
#: from it, and each run is an MCMC fit (thousands of them are out of reach here).
NOT_AUDITED = {
    "pseudo-posterior": "local, asymptotic guarantee (ε_x = 2Δ computed from the data set): no worst-case claim to refute",
}

CASES: dict[str, Case] = {c.method: c for c in (
    Case("dirichlet-multinomial", BINARY, *MOVED, {"epsilon": 2.0},
         "n = 1 moves cells: P(y* = (1, 0)) has the ratio (n + α)/α = e^ε exactly (S-000 eq. 11)"),
    Case("beta-binomial", CATEGORICAL, *MOVED, {"epsilon": 2.0}, "as the Dirichlet-multinomial, I = 2"),
    Case("dp-prior", BINARY, *MOVED, {"epsilon": 2.0}, "n = 1 moves cells: the ratio ((1 + a)/a)^n = e^ε is attained"),
    Case("gamma-poisson", BINARY, *MOVED, {"epsilon": 2.0, "options": {"exposures": "exposures.csv"}},
         "the smallest-exposure cell loses its only event", {"exposures.csv": _frame(x=[0, 1], exposure=[1.0, 4.0])}),
    Case("laplace-sanitizer", BINARY, *ADDED, {"epsilon": 2.0, "release": "table", "options": {"post": "raw"},
                                              "neighbouring": "add-remove"},
         "add/remove one record in cell 0: P(noisy count ≥ 1) has the ratio e^ε"),
    Case("perturbed-histogram", NUMERIC, _frame(v=[0.7]), _frame(v=[0.2, 0.7]), {"epsilon": 2.0},
         "add/remove one value in the first bin"),
    Case("smoothed-histogram", NUMERIC, _frame(v=[0.2]), _frame(v=[0.7]), {"epsilon": 2.0},
         "n = 1; the value moves from the first bin to the second"),
    Case("exponential-ecdf", NUMERIC, _frame(v=[0.2, 0.7]), _frame(v=[0.7, 0.7]), {"epsilon": 2.0},
         "n = 2; one value crosses the middle grid point", cells=GRID_CELLS),
    Case("modips", BINARY, *MOVED, {"epsilon": 2.0, "options": {"model": "multinomial"}},
         "n = 1; the record moves"),
    Case("privsyn", PAIRS, _frame(x=[1], y=[1]), _frame(x=[0, 1], y=[0, 1]), {"rho": 0.5, "delta": 1e-6, "options": {"iterations": 5}},
         "add/remove one record in the cell (0, 0)"),
    Case("mst", Domain.from_sizes({"x": 2, "y": 2, "z": 2}), _frame(x=[1], y=[1], z=[1]), _frame(x=[0, 1], y=[0, 1], z=[0, 1]),
         {"rho": 0.5, "delta": 1e-6}, "add/remove one record in the cell (0, 0, 0); three columns, so two edge choices run"),
    Case("aim", PAIRS, _frame(x=[1], y=[1]), _frame(x=[0, 1], y=[0, 1]),
         {"rho": 0.5, "delta": 1e-6, "options": {"rounds": 2, "iterations": 1, "final_iterations": 1}},
         "add/remove one record in the cell (0, 0); two nominal rounds, so one adaptive round"),
    Case("dpsyn", PAIRS, _frame(x=[1], y=[1]), _frame(x=[0, 1], y=[0, 1]),
         {"epsilon": 2.0, "delta": 1e-6, "options": {"public": "public.csv", "least": 10, "multiple": 1, "pool": 200,
                                                     "iterations": 5}},
         "add/remove one record in the cell (0, 0); a public file of the same domain",
         {"public.csv": _frame(x=[0, 1, 1, 0], y=[1, 0, 1, 1])}),
    Case("rdt", PAIRS, _frame(x=[1], y=[1]), _frame(x=[0, 1], y=[0, 1]),
         {"epsilon": 2.0, "neighbouring": "add-remove",
          "options": {"sensitive": "y", "structure": "structure.csv", "targets": "targets.csv", "trees": 1, "n_b": 1,
                      "depth": 1, "leaf_min": 0, "structure_seed": 0}},
         "add/remove one record in the leaf x = 0 (label 0); fifty public targets in that leaf read its noisy distribution",
         {"structure.csv": _frame(x=[0, 0, 1, 1], y=[0, 1, 0, 1]), "targets.csv": _frame(x=[0] * 50)}),
)}


@dataclass(frozen=True)
class Result:
    """One audit: the claim, the lower bound found and the event that gave it."""

    method: str
    relation: str
    claimed_epsilon: float
    delta: float
    lower_bound: float
    runs: int
    event: str
    broken: bool

    @property
    def flagged(self) -> bool:
        """The bound refutes the claim."""
        return self.lower_bound > self.claimed_epsilon

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "flagged": self.flagged}


def counts_of(table: pd.DataFrame, domain: Domain) -> np.ndarray:
    """A release as counts over the domain's cells: a table release's ``count`` column, or the
    released records counted by cell."""
    if "count" in table.columns and len(table) == domain.cells():
        return table["count"].to_numpy(dtype=np.int64)
    encoded, _ = encode_frame(table[list(domain.names)], domain)
    cells = np.ravel_multi_index(tuple(encoded[n].codes for n in domain.names), domain.shape())
    return np.bincount(cells, minlength=domain.cells())


def weaken(measurement, factor: float = 0.5):
    """The broken variant's tamper: the same measurement with ``factor`` times its noise (or prior)."""
    return replace(measurement, mechanism=measurement.mechanism.weakened(factor))


def releases(case: Case, data: pd.DataFrame, runs: int, seed: int, folder: Path,
             tamper: Callable | None = None, progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, Any]:
    """``runs`` releases of ``data`` through the real release path, as count vectors (one per row)."""
    from ..api import _release  # the audit runs what dipsy synth runs

    kwargs = dict(case.kwargs)
    options = {k: str(folder / v) if v in case.files else v for k, v in kwargs.pop("options", {}).items()}
    cells = case.cells or case.domain
    out, statement = [], None
    for r in range(runs):
        release = _release(data, case.domain, case.method, kwargs.get("epsilon"), 1, delta=kwargs.get("delta"),
                           rho=kwargs.get("rho"), columns=None, seed=seed + r, options=options, ledger=None,
                           dataset_id=None, budget_cap=None, release=kwargs.get("release", "records"),
                           neighbouring=kwargs.get("neighbouring"), tamper=tamper,
                           accept_noise=True)  # the audit tests the guarantee, not the utility
        out.append(counts_of(release.tables[0], cells))
        statement = release.statement
        if progress is not None:
            progress(r)
    return np.array(out), statement


def _features(a: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Each cell's count, and the difference of every two cells' counts (a substitution moves two)."""
    out = [(f"count of cell {k}", a[:, k]) for k in range(a.shape[1])]
    out += [(f"count of cell {j} - count of cell {k}", a[:, j] - a[:, k])
            for j in range(a.shape[1]) for k in range(j + 1, a.shape[1])]
    return out


def _events(a: np.ndarray, b: np.ndarray):
    """Every event {feature >= t} and {feature <= t}: its key, and its indicator over the runs of a and b."""
    for (name, fa), (_, fb) in zip(_features(a), _features(b)):
        for t in np.unique(np.concatenate([fa, fb])):
            yield (name, ">=", t), fa >= t, fb >= t
            yield (name, "<=", t), fa <= t, fb <= t


def _event(a: np.ndarray, b: np.ndarray, key: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The event ``key`` chosen on other runs, over the runs of a and b (its threshold need not occur here)."""
    name, op, t = key
    fa, fb = dict(_features(a))[name], dict(_features(b))[name]
    return (fa >= t, fb >= t) if op == ">=" else (fa <= t, fb <= t)


def lower_bound(k1: int, k0: int, n: int, delta: float = 0.0, alpha: float = ALPHA) -> float:
    """``log((CP_lower(k₁) − δ)/CP_upper(k₀))`` at α/2 each (−inf when the numerator is not positive).

    >>> round(lower_bound(500, 50, 1000), 3)
    1.969
    """
    low = stats.beta.ppf(alpha / 2, k1, n - k1 + 1) if k1 > 0 else 0.0
    high = stats.beta.ppf(1 - alpha / 2, k0 + 1, n - k0) if k0 < n else 1.0
    return math.log((low - delta) / high) if low - delta > 0 else -math.inf


def bound_from(a: np.ndarray, b: np.ndarray, delta: float) -> tuple[float, str]:
    """Pick the event and direction on the first half of the runs, bound it on the second."""
    half = len(a) // 2
    best, choice = -math.inf, None
    for key, ea, eb in _events(a[:half], b[:half]):
        for first, second, direction in ((ea, eb, "D over D'"), (eb, ea, "D' over D")):
            found = lower_bound(int(first.sum()), int(second.sum()), half, delta)  # the bound it would give
            if found > best or choice is None:
                best, choice = found, (key, direction)
    key, direction = choice
    ea, eb = _event(a[half:], b[half:], key)
    first, second = (ea, eb) if direction == "D over D'" else (eb, ea)
    n = len(a) - half
    name, op, t = key
    return lower_bound(int(first.sum()), int(second.sum()), n, delta), f"{name} {op} {t} ({direction})"


def audit(method: str, runs: int = 2000, broken: bool = False, seed: int = 0, folder: Path | None = None,
          progress: Callable[[int], None] | None = None) -> Result:
    """Audit ``method`` on its worst-case pair: ``runs`` releases of each data set."""
    case = CASES[method]
    quiet = logging.getLogger("dipsy")
    level, quiet.level = quiet.level, logging.ERROR  # tiny data make the marginal methods warn on every run
    try:
        return _audit(case, runs, broken, seed, folder, progress)
    finally:
        quiet.setLevel(level)


def _audit(case: Case, runs: int, broken: bool, seed: int, folder: Path | None, progress) -> Result:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        where = Path(folder or tmp)
        for name, frame in case.files.items():
            frame.to_csv(where / name, index=False)
        tamper = weaken if broken else None
        a, statement = releases(case, case.data, runs, seed, where, tamper, progress)
        b, _ = releases(case, case.neighbour, runs, seed + runs, where, tamper, progress)
    claim = statement.claim()
    if statement.definition == "pure-DP":
        epsilon, delta = claim["epsilon_total"], 0.0
    else:
        epsilon, delta = claim["epsilon_total"], claim["delta_total"]
    found, event = bound_from(a, b, delta)
    return Result(case.method, str(statement.relation), epsilon, delta, found, runs, event, broken)


def format_table(results: list[Result]) -> str:
    """The audit table in Markdown."""
    rows = ["| method | relation | claimed ε | δ | runs | variant | lower bound | flagged | event |",
            "|---|---|---:|---:|---:|---|---:|---|---|"]
    for r in results:
        bound = "−∞" if r.lower_bound == -math.inf else f"{r.lower_bound:.3f}"
        rows.append(f"| {r.method} | {r.relation} | {r.claimed_epsilon:.4g} | {r.delta:g} | {r.runs} | "
                    f"{'broken (half the noise)' if r.broken else 'as released'} | {bound} | "
                    f"{'yes' if r.flagged else 'no'} | {r.event} |")
    return "\n".join(rows)
