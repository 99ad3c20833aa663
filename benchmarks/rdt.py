"""S-004's comparisons (Duke variable-depth random decision trees; METHODS.md §5.2) on Adult's split.

Data: ``examples/adult`` (the seven columns of ``shared/data/adult/pub025``): ``priv.csv`` (32,384 confidential rows) and ``pub.csv`` (3,238
public rows, a 10 % sample: ``structure_weight=10``, so ``n_b`` and ``leaf_min`` count confidential
records). Columns: public age, education, workclass, occupation, hours-per-week; sensitive sex, race
(synthesized in that order). Female is ``sex == 0``: in the full ``adult.csv`` code 0 has 16,192
records, Adult's published count of Female (Male: 32,650).

Grid (method ``rdt``): n_b ∈ {1000, 2000} × ε_tree ∈ {0.1, 0.4} × trees ∈ {5, 10} × collapsing ∈ {1, 2},
total ε = ε_tree × trees × 2 (two sensitive columns). ε_tree is per tree, as S-004 states λ; but dipsy
releases the confidential records' own public columns, so the neighbours are substitutions (Δ₁ = 2)
and the noise scale is 2/ε_tree: S-004's λ = ε/Δ is ε_tree/2 here (S-004 used Δ = 1, add/remove).

Collapsing (S-004 §6, "Effect of collapsing"):

- method 1: none, the domain's codes as they are (S-004's method 1 only expresses pay in $10,000
  units, a binning Adult's discretised domain already has);
- method 2: S-004 pools agencies with < 500 records and occupations with < 200 (counted in the target
  year's data); here the same thresholds in the same units (confidential records: the public
  sample's counts × 10): ``collapse=occupation:200,workclass:500`` (workclass is Adult's
  employer-type attribute, the analogue of agency). That pools occupations 11 and 13 (about 90 and
  30 records) and workclasses 6 and 7 (about 20 each). S-004 widens pay from $10,000 to $25,000
  units (2.5×); Adult has no pay, its nearest numeric work-intensity attribute, hours-per-week, is
  coarsened by the nearest whole factor, 3 (``coarsen=hours-per-week:3``, 32 → 11 bins). Age is left
  as it is, as S-004 leaves it. ``--collapsing 1,2,2s`` adds "2s", a stronger pooling
  (``coarsen=hours-per-week:4,age:2``, ``collapse=occupation:2000,workclass:5000``: occupations
  below 2000 records and every workclass but Private pooled), to show what heavier pooling does.

Baselines at the same total ε: ``privsyn`` on all 7 columns (δ = 1e-9; its public columns are
synthetic too; note it is (ε, δ)-DP under add/remove, which is 2ε under substitution: it gets the
looser guarantee); ``independent``: the Laplace sanitizer's noisy (sex, race) table (substitution,
table release) clamped at 0, each confidential row's labels drawn from it regardless of the public
columns; ``jagannathan``: ``rdt`` with ``structure=random``, depth 3 (no collapsing: collapse counts
structure records, and numeric columns are split at thresholds).

Metrics, confidential vs synthetic, proportions over all cells of the domain: 2-way TVD (½ Σ|p − q|)
averaged over sex × each public, race × each public and sex × race (11 tables); 3-way TVD averaged over
sex × race × each public (5 tables); Pearson r of the cell proportions of those 5 three-way tables
pooled (S-004 Fig. 3b); the TVD of sex × occupation (finding d); a logistic regression of
1[sex == 0] (female) on the 5 public columns as categorical predictors (statsmodels ``Logit``, the
reference level of each the most frequent in the confidential data), fitted on both: the mean
absolute difference and the Pearson r of the slope coefficients. A level enters only when it has
≥ 50 records and both sexes in both data sets (absent levels, and levels whose MLE diverges under
separation, e.g. occupation 13, all 10 records male, are merged into the reference in both fits; so is a
level aliased with an earlier one, their records differing in < 50: occupation 14 with workclass 8, both
Adult's "?"). Newton, at most 50 steps; results.json records whether both fits converged.

Every run passes ``seed=`` (a test release, so the numbers reproduce); repetition r uses seed and
structure_seed 2018 + r for every configuration (paired comparisons). Writes results.md and
results.json under ``--out``.

Usage: .venv/bin/python benchmarks/rdt.py [--reps 4] [--out build/bench/rdt] [--collapsing 1,2]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: a 2-thread BLAS beside other work stalls the fits

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import statsmodels.api as sm  # noqa: E402

import dipsy  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "examples" / "adult"  # the seven columns of shared/data/adult/pub025
PRIV, PUB, DOMAIN = DATA / "priv.csv", DATA / "pub.csv", DATA / "domain.yaml"
PUBLIC = ["age", "education", "workclass", "occupation", "hours-per-week"]
SENSITIVE = ["sex", "race"]
FEMALE = 0
SEED = 2018
COLLAPSING = {
    "1": {},
    "2": {"coarsen": "hours-per-week:3", "collapse": "occupation:200,workclass:500"},
    "2s": {"coarsen": "hours-per-week:4,age:2", "collapse": "occupation:2000,workclass:5000"},
}
METRICS = ("tvd2", "tvd3", "joint_r", "tvd_sex_occ", "coef_mad", "coef_r", "seconds")  # the table's order
LEVEL_MIN = 50


# -- metrics --------------------------------------------------------------------------------------


def proportions(df: pd.DataFrame, cols: list[str], sizes: dict[str, int]) -> np.ndarray:
    """Cell proportions of the cross-table of ``cols`` over every cell of the domain."""
    code = np.zeros(len(df), dtype=np.int64)
    for c in cols:
        code = code * sizes[c] + df[c].to_numpy(dtype=np.int64)
    counts = np.bincount(code, minlength=int(np.prod([sizes[c] for c in cols])))
    return counts / counts.sum()


def tvd(conf: pd.DataFrame, syn: pd.DataFrame, cols: list[str], sizes: dict[str, int]) -> float:
    return 0.5 * float(np.abs(proportions(conf, cols, sizes) - proportions(syn, cols, sizes)).sum())


def dummies(df: pd.DataFrame, terms: list[tuple[str, int]]) -> np.ndarray:
    return np.column_stack([df[c].to_numpy() == k for c, k in terms]).astype(float)


def logit_coefficients(df: pd.DataFrame, terms: list[tuple[str, int]]) -> tuple[np.ndarray, bool]:
    """Slopes of 1[sex == female] on the terms' indicators (other levels merged into the reference), converged?"""
    y = (df["sex"].to_numpy() == FEMALE).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.Logit(y, sm.add_constant(dummies(df, terms), has_constant="add")).fit(disp=0, maxiter=50)
    return fit.params[1:], bool(fit.mle_retvals["converged"])


def kept_terms(conf: pd.DataFrame, syn: pd.DataFrame) -> list[tuple[str, int]]:
    """Levels with ≥ LEVEL_MIN records and both sexes in both data sets, the confidential mode excluded, and
    no level whose records differ from an earlier kept level's in < LEVEL_MIN records in either data set
    (aliased: workclass 8 and occupation 14 are both Adult's "?", apart for 5 Never-worked records)."""
    terms = []
    for c in PUBLIC:
        ok = None
        for df in (conf, syn):
            g = (df["sex"] == FEMALE).groupby(df[c]).agg(["size", "mean"])
            good = set(g.index[(g["size"] >= LEVEL_MIN) & (g["mean"] > 0) & (g["mean"] < 1)])
            ok = good if ok is None else ok & good
        terms += [(c, int(k)) for k in sorted(ok - {int(conf[c].mode()[0])})]
    keep = np.ones(len(terms), dtype=bool)
    for df in (conf, syn):
        D = dummies(df, terms)
        n = D.sum(axis=0)
        differ = n[:, None] + n[None, :] - 2 * (D.T @ D)
        for j in range(len(terms)):
            if keep[j] and any(keep[i] and terms[i][0] != terms[j][0] and differ[i, j] < LEVEL_MIN for i in range(j)):
                keep[j] = False
    return [t for t, k in zip(terms, keep) if k]


def score(conf: pd.DataFrame, syn: pd.DataFrame, sizes: dict[str, int]) -> dict[str, float]:
    two = [[s, p] for s in SENSITIVE for p in PUBLIC] + [SENSITIVE]
    three = [SENSITIVE + [p] for p in PUBLIC]
    pc = np.concatenate([proportions(conf, t, sizes) for t in three])
    ps = np.concatenate([proportions(syn, t, sizes) for t in three])
    terms = kept_terms(conf, syn)
    (a, ok_a), (b, ok_b) = logit_coefficients(conf, terms), logit_coefficients(syn, terms)
    return {
        "tvd2": float(np.mean([tvd(conf, syn, t, sizes) for t in two])),
        "tvd3": float(np.mean([tvd(conf, syn, t, sizes) for t in three])),
        "joint_r": float(np.corrcoef(pc, ps)[0, 1]),
        "coef_mad": float(np.mean(np.abs(a - b))),
        "coef_r": float(np.corrcoef(a, b)[0, 1]),
        "coef_terms": len(a),
        "logit_converged": ok_a and ok_b,
        "tvd_sex_occ": tvd(conf, syn, ["sex", "occupation"], sizes),
    }


# -- the runs -------------------------------------------------------------------------------------


def run_rdt(domain, cfg: dict, seed: int) -> pd.DataFrame:
    options = {"sensitive": ",".join(SENSITIVE), "trees": cfg["trees"], "structure_seed": seed}
    if cfg["method"] == "jagannathan":
        options |= {"structure": "random", "depth": 3}
    else:
        options |= {"structure": str(PUB), "structure_weight": 10, "n_b": cfg["n_b"], **COLLAPSING[cfg["collapsing"]]}
    return dipsy.synthesize(str(PRIV), domain, method="rdt", epsilon=cfg["total"], seed=seed, options=options).tables[0]


def run_privsyn(domain, cfg: dict, seed: int) -> pd.DataFrame:
    return dipsy.synthesize(str(PRIV), domain, method="privsyn", epsilon=cfg["total"], delta=1e-9, seed=seed).tables[0]


def run_independent(domain, cfg: dict, seed: int, conf: pd.DataFrame) -> pd.DataFrame:
    table = dipsy.synthesize(
        str(PRIV),
        domain,
        method="laplace-sanitizer",
        epsilon=cfg["total"],
        seed=seed,
        columns=SENSITIVE,
        neighbouring="substitute",
        release="table",
    ).tables[0]
    p = np.maximum(table["count"].to_numpy(dtype=float), 0)
    p = p / p.sum() if p.sum() > 0 else np.full(len(p), 1 / len(p))
    pick = np.random.default_rng(seed).choice(len(p), size=len(conf), p=p)
    out = conf[PUBLIC].copy()
    for c in SENSITIVE:
        out[c] = table[c].to_numpy()[pick]
    return out


def configurations(collapsing: list[str]) -> list[dict]:
    cfgs = []
    for n_b, eps, trees, col in itertools.product((1000, 2000), (0.1, 0.4), (5, 10), collapsing):
        cfgs.append({"method": "rdt", "n_b": n_b, "eps_tree": eps, "trees": trees, "collapsing": col})
    for eps, trees in itertools.product((0.1, 0.4), (5, 10)):
        cfgs.append({"method": "jagannathan", "n_b": None, "eps_tree": eps, "trees": trees, "collapsing": "1"})
    for c in cfgs:
        c["total"] = round(c["eps_tree"] * c["trees"] * len(SENSITIVE), 10)
    totals = sorted({c["total"] for c in cfgs})
    cfgs += [
        {"method": m, "n_b": None, "eps_tree": None, "trees": None, "collapsing": None, "total": t}
        for m in ("privsyn", "independent")
        for t in totals
    ]
    return cfgs


def label(c: dict) -> str:
    return " ".join(f"{k}={c[k]}" for k in ("method", "n_b", "eps_tree", "trees", "collapsing", "total") if c[k] is not None)


# -- summary and findings ---------------------------------------------------------------------------


def summarise(runs: list[dict], cfgs: list[dict]) -> list[dict]:
    rows = []
    for c in cfgs:
        mine = [r for r in runs if r["config"] == c]
        sd = lambda xs: float(np.std(xs, ddof=1)) if len(xs) > 1 else 0.0  # noqa: E731
        rows.append(
            {**c, **{m: (float(np.mean([r[m] for r in mine])), sd([r[m] for r in mine])) for m in METRICS}, "reps": len(mine)}
        )
    return rows


def markdown(rows: list[dict]) -> str:
    head = (
        "| method | n_b | ε_tree | trees | collapsing | total ε | 2-way TVD | 3-way TVD | joint-prop. r | "
        "sex×occ TVD | logit coef MAD | coef r | seconds |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    fmt = lambda v: "–" if v is None else f"{v:g}"  # noqa: E731
    for r in rows:
        cells = [r["method"], fmt(r["n_b"]), fmt(r["eps_tree"]), fmt(r["trees"]), r["collapsing"] or "–", f"{r['total']:g}"]
        cells += [f"{r[m][0]:.4f} ± {r[m][1]:.4f}" for m in METRICS[:-1]] + [f"{r['seconds'][0]:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired(runs: list[dict], metric: str, factor: str, lo, hi, where=lambda c: True) -> dict:
    """Runs at factor = hi minus their partner at factor = lo (all else and the rep the same)."""
    key = lambda r: (tuple(sorted((k, v) for k, v in r["config"].items() if k not in (factor, "total"))), r["rep"])  # noqa: E731
    base = {
        key(r): r[metric] for r in runs if r["config"]["method"] == "rdt" and r["config"][factor] == lo and where(r["config"])
    }
    pairs = [
        (base[key(r)], r[metric])
        for r in runs
        if r["config"]["method"] == "rdt" and r["config"][factor] == hi and where(r["config"]) and key(r) in base
    ]
    a, b = np.array(pairs).T
    d = b - a
    se = float(np.std(d, ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("inf")
    return {"lo": (a.mean(), a.std(ddof=1)), "hi": (b.mean(), b.std(ddof=1)), "diff": float(d.mean()), "se": se, "pairs": len(d)}


def findings(runs: list[dict], rows: list[dict]) -> list[str]:
    out = []

    def line(tag, text, p, holds, rule):
        out.append(
            f"({tag}) {text}: {p['lo'][0]:.4f} ± {p['lo'][1]:.4f} vs {p['hi'][0]:.4f} ± {p['hi'][1]:.4f} "
            f"(mean ± sd); paired difference {p['diff']:+.4f} ± {p['se']:.4f} (SE, {p['pairs']} pairs); "
            f"rule: {rule} → **{'holds' if holds else 'does not hold'}**"
        )

    p = paired(runs, "tvd2", "trees", 5, 10)
    line(
        "a",
        "10 trees are no better than 5 (2-way TVD, 5 trees vs 10)",
        p,
        p["diff"] > -2 * p["se"],
        "holds unless 10 trees lower the TVD by more than 2 SE",
    )
    p = paired(runs, "tvd2", "n_b", 1000, 2000)
    line("b", "n_b 1000 vs 2000: no significant difference (2-way TVD)", p, abs(p["diff"]) <= 2 * p["se"], "|difference| ≤ 2 SE")
    p = paired(runs, "tvd2", "eps_tree", 0.4, 0.1, lambda c: c["n_b"] == 1000)
    line(
        "c",
        "ε_tree 0.4 vs 0.1 at n_b = 1000: small difference (2-way TVD)",
        p,
        abs(p["diff"]) <= 0.1 * p["lo"][0],
        "|difference| ≤ 10 % of the ε_tree = 0.4 mean",
    )
    levels = {r["config"]["collapsing"] for r in runs if r["config"]["method"] == "rdt"}
    for tag, level in (("d", "2"), ("d'", "2s")):
        if {"1", level} <= levels:
            p = paired(runs, "tvd_sex_occ", "collapsing", "1", level)
            line(
                tag,
                f"collapsing {level} improves occupation (sex × occupation TVD, method 1 vs {level})",
                p,
                p["diff"] < -2 * p["se"],
                f"{level} lower by more than 2 SE",
            )
    ind = {r["total"]: r["tvd2"] for r in rows if r["method"] == "independent"}
    rdt = [r for r in rows if r["method"] == "rdt"]
    beats = lambda r: r["tvd2"][0] + 2 * r["tvd2"][1] < ind[r["total"]][0] - 2 * ind[r["total"]][1]  # noqa: E731
    cell = lambda n, e: [r for r in rdt if (r["n_b"], r["eps_tree"]) == (n, e)]  # noqa: E731
    by = "; ".join(
        f"n_b={n} ε_tree={e:g}: {sum(map(beats, cell(n, e)))} of {len(cell(n, e))} "
        f"(2-way TVD {np.mean([r['tvd2'][0] for r in cell(n, e)]):.4f})"
        for n, e in sorted({(r["n_b"], r["eps_tree"]) for r in rdt})
    )
    won = sum(map(beats, rdt))
    out.append(
        f"(e) RDT beats the independent baseline (2-way TVD; a configuration beats it when its mean + 2 sd lies below the "
        f"baseline's mean − 2 sd at the same total ε): {won} of {len(rdt)} configurations — {by}; independent: "
        + ", ".join(f"ε={t:g}: {v[0]:.4f} ± {v[1]:.4f}" for t, v in sorted(ind.items()))
        + f"; rule: all configurations → **{'holds' if won == len(rdt) else 'does not hold'}**"
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4, help="repetitions per configuration (seeds 2018, 2019, …)")
    ap.add_argument("--out", type=Path, default=Path("build/bench/rdt"))
    ap.add_argument("--collapsing", default="1,2", help="collapsing levels of the RDT grid: 1, 2, 2s (default 1,2)")
    args = ap.parse_args()
    collapsing = [c.strip() for c in args.collapsing.split(",")]
    if unknown := set(collapsing) - set(COLLAPSING):
        ap.error(f"unknown collapsing {sorted(unknown)}; use {', '.join(COLLAPSING)}")
    args.out.mkdir(parents=True, exist_ok=True)

    domain = dipsy.Domain.load(DOMAIN).project(PUBLIC + SENSITIVE)
    sizes = dict(zip(domain.names, domain.shape()))
    conf = pd.read_csv(PRIV)[PUBLIC + SENSITIVE]
    cfgs = configurations(collapsing)
    runs, start = [], time.monotonic()
    for i, c in enumerate(cfgs):
        for rep in range(args.reps):
            seed = SEED + rep
            t = time.monotonic()
            if c["method"] in ("rdt", "jagannathan"):
                syn = run_rdt(domain, c, seed)
            elif c["method"] == "privsyn":
                syn = run_privsyn(domain, c, seed)
            else:
                syn = run_independent(domain, c, seed, conf)
            seconds = time.monotonic() - t
            runs.append({"config": c, "rep": rep, "seed": seed, "seconds": seconds, **score(conf, syn, sizes)})
            print(
                f"[{i + 1}/{len(cfgs)} rep {rep + 1}/{args.reps} {time.monotonic() - start:6.0f}s] {label(c)}: "
                f"2-way TVD {runs[-1]['tvd2']:.4f}, r {runs[-1]['joint_r']:.3f}, coef MAD {runs[-1]['coef_mad']:.3f} ({seconds:.1f}s)",
                flush=True,
            )

    (args.out / "runs.json").write_text(json.dumps(runs, indent=1, default=str))  # raw runs first: a later failure keeps them
    rows = summarise(runs, cfgs)
    found = findings(runs, rows)
    total = time.monotonic() - start
    note = (
        f"S-004 comparisons on Adult pub025 (benchmarks/rdt.py): mean ± sd over {args.reps} seeded repetitions "
        f"(seed = structure_seed = {SEED} + rep; seeded runs are test releases, reproducible, not private releases). "
        "ε_tree is per tree under substitution (noise scale 2/ε_tree; S-004's λ = ε_tree/2). privsyn synthesizes all 7 "
        "columns (its public columns are synthetic too) under add/remove (ε, δ = 1e-9); 'independent' draws sex, race "
        "from the Laplace sanitizer's noisy joint table regardless of the public columns. seconds: wall time of the "
        f"synthesis per run. Logit fits that did not converge (50 Newton steps): "
        f"{sum(not r['logit_converged'] for r in runs)} of {len(runs)} runs. Total run time {total:.0f} s."
    )
    text = "\n\n".join([note, markdown(rows), "Which S-004 findings hold:", "\n".join(f"- {f}" for f in found)]) + "\n"
    (args.out / "results.md").write_text(text)
    (args.out / "results.json").write_text(
        json.dumps(
            {
                "reps": args.reps,
                "seed": SEED,
                "female_code": FEMALE,
                "collapsing": {k: COLLAPSING[k] for k in collapsing},
                "runs": runs,
                "summary": rows,
                "findings": found,
                "total_seconds": total,
            },
            indent=1,
            default=str,
        )
    )
    print("\n" + text)


if __name__ == "__main__":
    main()
