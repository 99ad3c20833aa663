"""The forecast (dipsy.forecast) against measured error on CE, Adult and ACS.

For each release: the forecast's verdict and headline share of prior or noise (public inputs
only), then the release itself, and measured against the original:

- the mean TVD of the 2-way marginals, beside the same for the original with every column
  shuffled independently (the "independent columns" reference a release should beat);
- for releases of a full table of at most 10⁶ cells, the measured share of the uniform: the
  least-squares weight s in q ≈ (1 − s)·p + s·u between the original's distribution p over the
  cells, the synthetic one q and the uniform u (what the forecast's share predicts for the
  Bayesian count models, and bounds for the noisy tables).

Usage: python benchmarks/forecast.py [--out build/bench/forecast] [--seed 0]
Each release is one unseeded-equivalent run with a seed (a test release: the benchmark measures,
it publishes nothing).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

import dipsy
from dipsy.api import plan_forecast
from dipsy.domain import Domain
from dipsy.engine import engine_for
from dipsy.evaluation import read_original
from dipsy.evaluation.marginals import kway_marginals

ROOT = Path(__file__).resolve().parents[1]
CE = (ROOT / "examples/ce/CEdata.csv", ROOT / "examples/ce/domain.yaml")
ADULT = (ROOT / "examples/adult/priv.csv", ROOT / "examples/adult/domain.yaml")
ACS = (ROOT / "examples/acs/national2019.csv", ROOT / "examples/acs/domain.yaml")

#: Six ACS columns, 1,029,600 cells over 27,253 rows: about the size of the wage survey a user tried
#: every method on (766,080 cells over 28k rows), where the full-table methods released noise.
WAGE_LIKE = ["PUMA", "AGEP", "SEX", "RAC1P", "EDU", "PINCP_DECILE"]
#: (label, data, method, ε, δ, sets, columns, options, rows declared public for add/remove methods)
CASES = [
    ("CE", CE, "dirichlet-multinomial", 10.0, None, 1, None, {}, None),
    ("CE", CE, "dirichlet-multinomial", 1.0, None, 1, None, {}, None),
    ("CE", CE, "dirichlet-multinomial", 5.0, None, 1, ["Race"], {}, None),
    ("CE", CE, "dp-prior", 1.0, None, 1, ["Race", "UrbanRural"], {}, None),
    ("CE", CE, "laplace-sanitizer", 1.0, None, 1, None, {}, None),
    ("CE", CE, "smoothed-histogram", 1.5, None, 1, ["Expenditure"], {}, None),
    ("CE", CE, "perturbed-histogram", 1.5, None, 5, ["Expenditure"], {}, 1000),
    ("CE", CE, "modips", 1.5, None, 5, ["Expenditure", "Income", "UrbanRural"], {}, None),
    ("CE", CE, "modips", 10.0, None, 1, ["Expenditure"], {}, None),
    ("Adult", ADULT, "dirichlet-multinomial", 1.0, None, 1, None, {}, None),
    ("Adult", ADULT, "laplace-sanitizer", 1.0, None, 1, None, {}, None),
    ("Adult", ADULT, "laplace-sanitizer", 1.0, None, 1, ["sex", "race", "workclass"], {}, None),
    ("Adult", ADULT, "privsyn", 1.0, 1e-9, 1, None, {}, 32000),
    ("ACS", ACS, "dirichlet-multinomial", 1.0, None, 1, ["SEX", "RAC1P", "HISP", "EDU"], {}, None),
    # about the wage survey's size: 1,029,600 cells over 27,253 rows
    ("ACS", ACS, "dirichlet-multinomial", 1.0, None, 1, WAGE_LIKE, {}, None),
    ("ACS", ACS, "laplace-sanitizer", 1.0, None, 1, WAGE_LIKE, {}, None),
    ("ACS", ACS, "dp-prior", 1.0, None, 1, WAGE_LIKE, {}, None),
    ("ACS", ACS, "perturbed-histogram", 1.0, None, 1, WAGE_LIKE, {}, 27000),
    ("ACS", ACS, "smoothed-histogram", 1.0, None, 1, WAGE_LIKE, {}, None),
    ("ACS", ACS, "privsyn", 1.0, 1e-9, 1, WAGE_LIKE, {}, 27000),
    ("ACS", ACS, "dpsyn", 1.0, 1e-9, 1, WAGE_LIKE, {"public": str(ROOT / "examples/acs/national2018.csv")}, 27000),
    ("ACS", ACS, "privsyn", 1.0, 1e-9, 1, None, {}, 27000),
]
MAX_SHARE_CELLS = 1_000_000


#: Methods whose release mixes the data's table with a uniform one (or adds noise to empty cells).
MIXTURES = ("dirichlet-multinomial", "dp-prior", "laplace-sanitizer", "perturbed-histogram", "smoothed-histogram")


def uniform_share(original: pd.DataFrame, synthetic: pd.DataFrame, domain: Domain, method: str) -> float | None:
    """Least-squares s in q ≈ (1 − s)p + s·u over the full table (None past MAX_SHARE_CELLS).

    u is uniform over the cells (the flat Dirichlet prior), except for the smoothed histogram,
    whose uniform is over the public box: each cell's share is its bins' volume.
    """
    if method not in MIXTURES or domain.cells() > MAX_SHARE_CELLS:
        return None
    names = list(domain.names)
    p, q = (
        np.asarray(engine_for(f, domain, "error").contingency(names, form="dense").counts, float) for f in (original, synthetic)
    )
    p, q = p / p.sum(), q / q.sum()
    if method == "smoothed-histogram":
        widths = [np.diff(c.bins) if c.bins is not None else np.ones(c.size) for c in domain.columns]
        u = widths[0]
        for w in widths[1:]:
            u = np.multiply.outer(u, w)  # C order, as the dense table
        u = np.ravel(u) / np.sum(u)
    else:
        u = np.full_like(p, 1 / p.size)
    d = u - p
    return float(np.dot(q - p, d) / np.dot(d, d))


def independent(original: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.permutation(original[c].to_numpy()) for c in original.columns})


def run(case: tuple, seed: int) -> dict:
    label, (data, domain_path), method, eps, delta, sets, columns, options, rows = case
    domain = Domain.load(domain_path)
    scope = domain.project(columns)
    got = plan_forecast(data, domain, method, eps, sets, delta=delta, columns=columns, options=options, rows=rows)
    head = got.parts[0] if got.parts else {}
    t = time.perf_counter()
    release = dipsy.synthesize(
        data,
        domain,
        method=method,
        epsilon=eps,
        delta=delta,
        sets=sets,
        columns=columns,
        options=options,
        seed=seed,
        accept_noise=True,
        ledger=False,
    )
    seconds = time.perf_counter() - t
    original = read_original(data, scope)  # the rows that match the domain, as the release saw them
    marg = kway_marginals(original, release.tables, scope, three_way=0, seed=seed)
    base = kway_marginals(original, [independent(original, seed)], scope, three_way=0, seed=seed)
    two = "2-way" if len(scope) > 1 else "1-way"
    return {
        "data": label,
        "method": method,
        "epsilon": eps,
        "sets": sets,
        "columns": list(scope.names),
        "cells": scope.cells(),
        "verdict": got.verdict,
        "forecast_share": head.get("share"),
        "forecast": got.summary(),
        "measured_uniform_share": uniform_share(original, release.tables[0], scope, method),
        "tvd": marg[two]["mean_tvd"],
        "tvd_independent": base[two]["mean_tvd"],
        "tvd_kind": two,
        "seconds": seconds,
    }


def table(rows: list[dict]) -> str:
    out = [
        "| data | method | ε (sets) | columns | cells | forecast | share forecast | share measured | TVD | independent |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:

        def share(v: float | None) -> str:
            return "—" if v is None else f"{v:.3f}"

        ind = "—" if r["tvd_kind"] == "1-way" else f"{r['tvd_independent']:.3f}"  # shuffling keeps one-ways
        cols = "all" if len(r["columns"]) > 6 else ", ".join(r["columns"])
        out.append(
            f"| {r['data']} | {r['method']} | {r['epsilon']:g} ({r['sets']}) | {cols} | {r['cells']:,} | {r['verdict']} | "
            f"{share(r['forecast_share'])} | {share(r['measured_uniform_share'])} | {r['tvd']:.3f} ({r['tvd_kind']}) | {ind} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build/bench/forecast")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in CASES:
        rows.append(run(case, args.seed))
        r = rows[-1]
        print(
            f"{r['data']:6s} {r['method']:22s} ε={r['epsilon']:<5g} {r['verdict']:8s} TVD {r['tvd']:.3f} "
            f"(independent {r['tvd_independent']:.3f}) {r['seconds']:.1f} s",
            flush=True,
        )
    (args.out / "results.json").write_text(json.dumps(rows, indent=1, default=float) + "\n")
    (args.out / "results.md").write_text(table(rows) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
