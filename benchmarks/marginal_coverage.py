r"""Coverage of 95 % intervals from the marginal methods' releases: m independent sets combined by
Reiter's (2003) partial-synthesis rule, beside one set's naive interval, and, for analyses the
domain declares (``--declare``), the noise-aware interval from the release's published tables.

**Data.** Each repetition draws a fresh confidential sample of n records (default 10,000, about a
third of Adult's private split) from a Bayesian network with known parameters (:data:`CONFIDENTIAL`):

- ``R`` region (3), ``S`` sex (2, independent), ``E`` education (0–5) given R, ``B`` employed (2)
  given E, ``Y`` income decile (0–9) given E and S — a normal of mean
  ``1.5 + 1.0 E + 0.8 S + 0.3 E·S`` (an interaction: Y's slope on E is 1.3 where S = 1) and sd 1.6
  discretised to the integers, the end cells open — and two nuisance columns, ``C`` (4)
  given R and ``D`` (5) independent: 7 columns, 21 pairs for privsyn's selection.

The estimands and their population values are computed exactly from the network's probability
tables (:meth:`Network.truth`), not from a draw: the mean of Y, the proportion ``P(B = 1)``, the
slope of the OLS fit ``Y ~ E`` (the best linear predictor's slope ``Cov(E, Y) / Var(E)``, what OLS
estimates even though ``E[Y | E]`` is bent at the ends by the clipping), the slope of the logit
``B ~ E`` (the population's logistic fit to ``P(B = 1 | E)``, which is not logistic: what the
logit's maximum likelihood estimates) and the interaction ``E:S`` of the OLS fit ``Y ~ E * S``.

dpsyn needs a public data set: 5,000 records drawn once (seed fixed) from a *shifted* network
(:data:`PUBLIC`: other region shares, ``P(B = 1 | E)`` lower by 0.08, Y's slope on E 0.85 instead of
1.0), as last year's survey would be. What dpsyn takes from it (its public marginals and pool)
biases its estimates toward the public values wherever its regime measures less.

**Releases.** For each method × ε ∈ {1, 10} (δ = 1e-9, add/remove one record) × m ∈ {1, 5}, every
repetition makes one release with the method's default options (``dipsy.synthesize``, seeded: a
test release, so the numbers reproduce). Intervals, all from :mod:`dipsy.inference`:

- ``original``: the confidential sample itself (rule ``single``): the design's reference, ≈ 95 %;
- ``m=1, naive``: the one set of an m = 1 release at ε, its own variance (rule ``single``) — what a
  user gets from one privsyn/dpsyn set today;
- ``m=5, set 1 naive``: the first set of the m = 5 release (ε/5), rule ``single``;
- ``m=5, combined``: the five sets, Reiter's partial-synthesis rule ``reiter2003-partial``
  (``T = ū + b/m``, t with ``ν = (m − 1)(1 + m ū / b)²``);
- ``m=k, noise-aware`` (with ``--declare``): for each regression estimand whose analysis is
  declared, the interval from the release's published noisy table (:mod:`dipsy.noise_aware`: a
  parametric bootstrap over the sample and the noise, the m sets' tables pooled).

**Repetitions.** R = 200 by default: the binomial sd of an estimated coverage is
``sqrt(0.95 · 0.05 / 200) = 1.5`` points near 95 %, enough to tell a valid interval from one off by
5 points; the repetitions run in ``--jobs`` processes. 200 repetitions of privsyn and mst at
ε ∈ {1, 10} with three declared analyses take about 30 minutes on 2 cores. ``--reps`` changes it.

**Reported** per method, ε, interval and estimand: coverage (± its binomial sd), mean width, bias
(mean estimate − truth), the empirical sd of the estimate over the mean standard error (> 1: the
intervals are too narrow for the variability they have), and the coverage of the same intervals
re-centred by the measured bias ("debiased"): when that is near 95 % while the coverage is not, the
shortfall is bias that no between-set variance can show. Also the regimes dpsyn chose and how often
privsyn measured E and Y in one marginal.

Writes ``results.json``, ``results.md`` and ``coverage.png`` under ``--out``
(default ``build/bench/marginal_coverage``).

Usage: .venv/bin/python benchmarks/marginal_coverage.py [--reps 200] [--n 10000] [--jobs 2]
       [--methods privsyn,dpsyn] [--epsilons 1,10] [--sets 5] [--declare "Y ~ E"] [--out build/bench/marginal_coverage]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: two workers on two cores, one thread each
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

import dipsy  # noqa: E402
from dipsy import inference, noise_aware  # noqa: E402
from dipsy.domain import Domain  # noqa: E402
from dipsy.domain.analyses import Analysis  # noqa: E402

logger = logging.getLogger("marginal_coverage")

SIZES = {"R": 3, "S": 2, "E": 6, "B": 2, "Y": 10, "C": 4, "D": 5}
DOMAIN = Domain.from_sizes(SIZES)
DELTA = 1e-9
LEVEL = 0.95
SEED = 1313
PUBLIC_ROWS = 5000
ESTIMANDS = ("mean(Y)", "P(B = 1)", "slope of Y ~ E", "logit slope of B ~ E", "E:S of Y ~ E * S")
#: The regressions behind the estimands: formula, model, the term.
MODELS = {
    "slope of Y ~ E": ("Y ~ E", "ols", "E"),
    "logit slope of B ~ E": ("B ~ E", "logit", "E"),
    "E:S of Y ~ E * S": ("Y ~ E * S", "ols", "E:S"),
}


@dataclass(frozen=True)
class Network:
    """A Bayesian network over :data:`SIZES`: R → E → B; (E, S) → Y; R → C; S and D independent."""

    p_r: tuple[float, ...]
    p_s1: float
    p_e_given_r: tuple[tuple[float, ...], ...]
    p_b1_given_e: tuple[float, ...]
    y_intercept: float
    y_slope_e: float
    y_slope_s: float
    #: The E × S interaction in Y's mean (its slope on E is ``y_slope_e + y_interaction`` where S = 1).
    y_interaction: float
    y_sd: float
    p_c_given_r: tuple[tuple[float, ...], ...]
    p_d: tuple[float, ...]

    def y_given_es(self) -> np.ndarray:
        """``P(Y = y | E = e, S = s)``, shape (6, 2, 10): the normal discretised at y ± 0.5, end cells open."""
        e, s = np.meshgrid(np.arange(SIZES["E"]), np.arange(SIZES["S"]), indexing="ij")
        mu = self.y_intercept + self.y_slope_e * e + self.y_slope_s * s + self.y_interaction * e * s
        edges = np.concatenate([[-np.inf], np.arange(SIZES["Y"] - 1) + 0.5, [np.inf]])
        cdf = stats.norm.cdf((edges[None, None, :] - mu[..., None]) / self.y_sd)
        return np.diff(cdf, axis=-1)

    def p_e(self) -> np.ndarray:
        return np.asarray(self.p_r) @ np.asarray(self.p_e_given_r)

    def joint(self) -> np.ndarray:
        """``P(E = e, S = s, Y = y)``, shape (6, 2, 10): S independent of E."""
        p_s = np.array([1 - self.p_s1, self.p_s1])
        return self.p_e()[:, None, None] * p_s[None, :, None] * self.y_given_es()

    def truth(self) -> dict[str, float]:
        """The estimands' population values, exactly from the probability tables: the moments of the
        best linear (or logistic) predictor under the joint distribution, what OLS (the logit's
        maximum likelihood) estimates from a sample."""
        p_e = self.p_e()
        joint = self.joint()
        e, s, y = np.meshgrid(np.arange(SIZES["E"]), np.arange(SIZES["S"]), np.arange(SIZES["Y"]), indexing="ij")
        w = joint.ravel()
        # OLS Y ~ E and Y ~ E * S: the normal equations with the population's moments
        slope = _population_ols(np.column_stack([np.ones(w.size), e.ravel()]), y.ravel(), w)[1]
        design = np.column_stack([np.ones(w.size), e.ravel(), s.ravel(), (e * s).ravel()])
        interaction = _population_ols(design, y.ravel(), w)[3]
        # the logit of B on E: P(B = 1 | E) from the table, fitted by Newton's method with P(E) as weights
        p_b = np.asarray(self.p_b1_given_e)
        logit = _population_logit(np.column_stack([np.ones(SIZES["E"]), np.arange(SIZES["E"])]), p_b, p_e)[1]
        return {
            "mean(Y)": float(w @ y.ravel()),
            "P(B = 1)": float(p_e @ p_b),
            "slope of Y ~ E": float(slope),
            "logit slope of B ~ E": float(logit),
            "E:S of Y ~ E * S": float(interaction),
        }

    def draw(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """n records, column by column along the network (vectorised inverse-CDF draws)."""

        def pick(p: np.ndarray) -> np.ndarray:  # one categorical draw per row of the (n, k) matrix p
            return (rng.random(len(p))[:, None] > np.cumsum(p, axis=1)[:, :-1]).sum(axis=1)

        r = rng.choice(SIZES["R"], n, p=self.p_r)
        s = (rng.random(n) < self.p_s1).astype(np.int64)
        e = pick(np.asarray(self.p_e_given_r)[r])
        b = (rng.random(n) < np.asarray(self.p_b1_given_e)[e]).astype(np.int64)
        y = pick(self.y_given_es()[e, s])
        c = pick(np.asarray(self.p_c_given_r)[r])
        d = rng.choice(SIZES["D"], n, p=self.p_d)
        return pd.DataFrame({"R": r, "S": s, "E": e, "B": b, "Y": y, "C": c, "D": d}).astype(np.int64)


CONFIDENTIAL = Network(
    p_r=(0.5, 0.3, 0.2),
    p_s1=0.5,
    p_e_given_r=(
        (0.10, 0.20, 0.30, 0.20, 0.15, 0.05),
        (0.05, 0.10, 0.25, 0.30, 0.20, 0.10),
        (0.20, 0.30, 0.25, 0.15, 0.07, 0.03),
    ),
    p_b1_given_e=(0.20, 0.30, 0.40, 0.55, 0.65, 0.75),
    y_intercept=1.5,
    y_slope_e=1.0,
    y_slope_s=0.8,
    y_interaction=0.3,
    y_sd=1.6,
    p_c_given_r=((0.4, 0.3, 0.2, 0.1), (0.25, 0.25, 0.25, 0.25), (0.1, 0.2, 0.3, 0.4)),
    p_d=(0.2, 0.2, 0.2, 0.2, 0.2),
)
#: Last year's survey: the public data dpsyn reads (shifted shares, dependence and slope).
PUBLIC = Network(
    p_r=(0.4, 0.35, 0.25),
    p_s1=0.5,
    p_e_given_r=CONFIDENTIAL.p_e_given_r,
    p_b1_given_e=tuple(p - 0.08 for p in CONFIDENTIAL.p_b1_given_e),
    y_intercept=1.8,
    y_slope_e=0.85,
    y_slope_s=0.8,
    y_interaction=0.2,
    y_sd=1.6,
    p_c_given_r=CONFIDENTIAL.p_c_given_r,
    p_d=CONFIDENTIAL.p_d,
)


def _population_ols(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The best linear predictor's coefficients: ``(Xᵀ W X)⁻¹ Xᵀ W y`` with the probabilities ``w``."""
    return np.linalg.solve(x.T @ (w[:, None] * x), x.T @ (w * y))


def _population_logit(x: np.ndarray, p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The logit's population coefficients: the root of ``Σ w (p − σ(Xβ)) X = 0`` (Newton's method)."""
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        q = 1 / (1 + np.exp(-(x @ beta)))
        beta = beta + np.linalg.solve(x.T @ ((w * q * (1 - q))[:, None] * x), x.T @ (w * (p - q)))
    return beta


# -- one repetition ----------------------------------------------------------------------------------


def intervals(tables: list[pd.DataFrame], rule: str) -> dict[str, dict[str, float]]:
    """Estimate, variance, df and the 95 % interval of each estimand from ``tables`` by ``rule``."""
    rule = "single" if len(tables) == 1 else rule
    fits: dict[str, tuple[inference.Combined, int]] = {
        "mean(Y)": (inference.mean(tables, "Y", rule, LEVEL).combined, 0),
        "P(B = 1)": (inference.proportion(tables, "B", 1, rule, LEVEL).combined, 0),
    }
    for name, (formula, model, term) in MODELS.items():
        reg = inference.regression(tables, formula, rule, model=model, level=LEVEL)
        fits[name] = (reg.combined, reg.terms.index(term))
    return {name: _interval(c, k) for name, (c, k) in fits.items()}


def _interval(c: inference.Combined, k: int) -> dict[str, float]:
    return {
        "estimate": float(c.estimate[k]),
        "variance": float(c.variance[k]),
        "df": float(c.df[k]),
        "lower": float(c.lower[k]),
        "upper": float(c.upper[k]),
    }


def noise_aware_intervals(release: dipsy.Release, seed: int) -> dict[str, dict[str, float]]:
    """The noise-aware interval (:mod:`dipsy.noise_aware`) of each estimand whose model's table the
    release publishes (a declared analysis's pair or whole table); the others are left out."""
    out = {}
    for name, (formula, model, term) in MODELS.items():
        columns = Analysis(formula).columns
        if noise_aware.pooled(release.published, columns) is None:
            continue
        e = noise_aware.noise_aware(formula, release.published, columns, model, LEVEL, seed=seed)
        out[name] = _interval(e.combined, e.terms.index(term))
    return out


@dataclass(frozen=True)
class Task:
    rep: int
    n: int
    methods: tuple[str, ...]
    epsilons: tuple[float, ...]
    sets: int
    public: str
    #: Analyses the domain declares (formulas), which the marginal methods then measure first.
    declare: tuple[str, ...] = ()
    #: Their share of each set's budget (None: the methods' default).
    analysis_share: float | None = None


def one_repetition(task: Task) -> dict[str, Any]:
    """Draw the confidential sample, make every release, and return every interval and choice."""
    rng = np.random.default_rng([SEED, task.rep])
    data = CONFIDENTIAL.draw(task.n, rng)
    out: dict[str, Any] = {"rep": task.rep, "intervals": {"original": intervals([data], "single")}, "choices": {}, "seconds": {}}
    domain = dataclasses.replace(DOMAIN, analyses=tuple(Analysis(f) for f in task.declare))
    for i, method in enumerate(task.methods):
        options = {"public": task.public} if method == "dpsyn" else {}
        if task.declare and task.analysis_share is not None and method != "dpsyn":
            options["analysis_share"] = task.analysis_share
        for j, epsilon in enumerate(task.epsilons):
            for m in (1, task.sets):
                seed = SEED * 100_000 + task.rep * 1000 + i * 100 + j * 10 + m  # one per release, paired across reps
                start = time.perf_counter()
                release = dipsy.synthesize(
                    data,
                    domain,
                    method=method,
                    epsilon=epsilon,
                    delta=DELTA,
                    sets=m,
                    seed=seed,
                    options=options,
                    accept_noise=True,
                    ledger=False,
                )
                key = f"{method}|{epsilon:g}"
                out["seconds"][f"{key}|m={m}"] = time.perf_counter() - start
                if m == 1:
                    out["intervals"][f"{key}|m=1, naive"] = intervals(release.tables, "single")
                else:
                    assert release.metadata()["combining_rule"] == "reiter2003-partial"
                    out["intervals"][f"{key}|m={m}, set 1 naive"] = intervals(release.tables[:1], "single")
                    out["intervals"][f"{key}|m={m}, combined"] = intervals(release.tables, "reiter2003-partial")
                if release.published:
                    out["intervals"][f"{key}|m={m}, noise-aware"] = noise_aware_intervals(release, seed)
                out["choices"][f"{key}|m={m}"] = summarise_choices(release.parameters)
    return out


def summarise_choices(parameters: dict[str, Any]) -> list[str]:
    """Per set: dpsyn's regime, or whether privsyn measured E and Y in one marginal (``E~Y``) or not."""
    if "regime" in parameters or "regime_per_set" in parameters:
        regimes = parameters.get("regime_per_set") or [parameters["regime"]]
        return [r["name"] for r in regimes]
    selected = parameters.get("selected_marginals_per_set") or [parameters.get("selected_marginals", [])]
    return ["E~Y" if any({"E", "Y"} <= set(marginal) for marginal in chosen) else "no E~Y" for chosen in selected]


# -- summaries -----------------------------------------------------------------------------------------


def summarise(reps: list[dict[str, Any]], truth: dict[str, float]) -> list[dict[str, Any]]:
    """One row per interval kind and estimand: coverage, width, bias, sd/se, debiased coverage."""
    rows = []
    for key in reps[0]["intervals"]:
        for name in ESTIMANDS:
            if name not in reps[0]["intervals"][key]:  # a noise-aware interval only where the table is published
                continue
            got = [r["intervals"][key][name] for r in reps]
            est = np.array([g["estimate"] for g in got])
            lo, hi = np.array([g["lower"] for g in got]), np.array([g["upper"] for g in got])
            se = np.sqrt([g["variance"] for g in got])
            t = truth[name]
            bias = float(est.mean() - t)
            covered = (lo <= t) & (t <= hi)
            coverage = float(covered.mean())
            method, epsilon, interval = (key.split("|") + ["", ""])[:3] if "|" in key else ("", "", key)
            rows.append(
                {
                    "method": method,
                    "epsilon": float(epsilon) if epsilon else None,
                    "interval": interval or key,
                    "estimand": name,
                    "truth": t,
                    "reps": len(reps),
                    "coverage": coverage,
                    "coverage_sd": math.sqrt(max(coverage * (1 - coverage), LEVEL * (1 - LEVEL)) / len(reps)),
                    "width": float(np.mean(hi - lo)),
                    "bias": bias,
                    "sd": float(est.std(ddof=1)),
                    "mean_se": float(se.mean()),
                    "sd_over_se": float(est.std(ddof=1) / se.mean()),
                    "rmse": float(np.sqrt(np.mean((est - t) ** 2))),
                    "debiased_coverage": float(((lo - bias <= t) & (t <= hi - bias)).mean()),
                }
            )
    return rows


def choice_counts(reps: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for r in reps:
        for key, per_set in r["choices"].items():
            for c in per_set:
                counts.setdefault(key, {}).setdefault(c, 0)
                counts[key][c] += 1
    return counts


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Coverage of 95 % intervals: m = 1 vs m = 5 (Reiter 2003 partial synthesis), and noise-aware intervals of declared analyses",
        "",
        f"Generated data (benchmarks/marginal_coverage.py: a Bayesian network with known parameters), n = {meta['n']:,}, "
        f"R = {meta['reps']} repetitions, δ = {DELTA:g}, add/remove one record; dpsyn's public data: {PUBLIC_ROWS:,} records "
        f"of a shifted network. Population values: {', '.join(f'{k} = {v:.4f}' for k, v in meta['truth'].items())}. "
        f"Wall time {meta['seconds']:.0f} s on {meta['jobs']} process(es).",
        "",
        "Coverage ± its binomial sd (never shown below that of a 0.95 coverage, so 0 and 1 keep an honest error; nominal 0.95); width = mean interval width; bias = mean estimate − truth; "
        "sd/se = empirical sd of the estimate over its mean standard error (> 1: intervals too narrow); debiased = coverage of "
        "the same intervals re-centred by the measured bias.",
        "",
        "| method | ε | interval | estimand | coverage | width | bias | sd/se | debiased |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        eps = "" if r["epsilon"] is None else f"{r['epsilon']:g}"
        lines.append(
            f"| {r['method'] or '—'} | {eps or '—'} | {r['interval']} | {r['estimand']} | {r['coverage']:.2f} ± {r['coverage_sd']:.2f} "
            f"| {r['width']:.4f} | {r['bias']:+.4f} | {r['sd_over_se']:.2f} | {r['debiased_coverage']:.2f} |"
        )
    lines += [
        "",
        "Choices per set (counts over repetitions and sets): dpsyn's regime; privsyn: whether E and Y were measured in one marginal.",
        "",
    ]
    lines += [f"- {key}: " + ", ".join(f"{c} {k}" for c, k in sorted(v.items())) for key, v in meta["choices"].items()]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path, sets: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = sorted({r["method"] for r in rows if r["method"]})
    kinds = ["m=1, naive", f"m={sets}, set 1 naive", f"m={sets}, combined", f"m={sets}, noise-aware"]
    colours = ["#c44e52", "#dd8452", "#4c72b0", "#55a868"]
    fig, axes = plt.subplots(len(methods), len(ESTIMANDS), figsize=(4.2 * len(ESTIMANDS), 3.2 * len(methods)), squeeze=False)
    original = {r["estimand"]: r for r in rows if r["interval"] == "original"}
    for i, method in enumerate(methods):
        for j, name in enumerate(ESTIMANDS):
            ax = axes[i][j]
            mine = [r for r in rows if r["method"] == method and r["estimand"] == name]
            epsilons = sorted({r["epsilon"] for r in mine})
            for k, kind in enumerate(kinds):
                got = [r for e in epsilons for r in mine if r["epsilon"] == e and r["interval"] == kind]
                if len(got) != len(epsilons):  # no noise-aware interval for an estimand whose table is not published
                    continue
                x = np.arange(len(epsilons)) + (k - 1.5) * 0.2
                ax.bar(
                    x,
                    [g["coverage"] for g in got],
                    0.19,
                    yerr=[2 * g["coverage_sd"] for g in got],
                    color=colours[k],
                    label=kind,
                    capsize=3,
                )
            ax.axhline(LEVEL, color="black", linestyle="--", linewidth=1)
            ax.axhline(original[name]["coverage"], color="grey", linestyle=":", linewidth=1)
            ax.set_xticks(np.arange(len(epsilons)), [f"ε = {e:g}" for e in epsilons])
            ax.set_ylim(0, 1.05)
            ax.set_title(f"{method}: {name}", fontsize=10)
            if j == 0:
                ax.set_ylabel("coverage of the 95 % interval")
    axes[0][0].legend(fontsize=8, loc="lower left")
    fig.suptitle("Coverage (± 2 binomial sd); dashed: 0.95; dotted: the original data's interval", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--methods", default="privsyn,dpsyn")
    parser.add_argument("--epsilons", default="1,10")
    parser.add_argument("--sets", type=int, default=5)
    parser.add_argument("--out", default="build/bench/marginal_coverage")
    parser.add_argument(
        "--declare", default="", help="analyses the domain declares, ';'-separated (e.g. 'Y ~ E'): measured first by the methods"
    )
    parser.add_argument("--analysis-share", type=float, default=None, help="the declared analyses' share (default the methods')")
    args = parser.parse_args(argv)
    declare = tuple(f.strip() for f in args.declare.split(";") if f.strip())
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("dipsy").setLevel(logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    public = out / "public.csv"
    PUBLIC.draw(PUBLIC_ROWS, np.random.default_rng([SEED, 10**6])).to_csv(public, index=False)
    tasks = [
        Task(
            rep,
            args.n,
            tuple(args.methods.split(",")),
            tuple(float(e) for e in args.epsilons.split(",")),
            args.sets,
            str(public),
            declare,
            args.analysis_share,
        )
        for rep in range(args.reps)
    ]
    start = time.perf_counter()
    reps = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for k, result in enumerate(pool.map(one_repetition, tasks), start=1):
            reps.append(result)
            if k % 10 == 0 or k == len(tasks):
                logger.info("%d/%d repetitions, %.0f s", k, len(tasks), time.perf_counter() - start)
    seconds = time.perf_counter() - start
    truth = CONFIDENTIAL.truth()
    rows = summarise(reps, truth)
    meta = {
        "n": args.n,
        "reps": args.reps,
        "jobs": args.jobs,
        "sets": args.sets,
        "declared_analyses": list(declare),
        "analysis_share": args.analysis_share,
        "delta": DELTA,
        "seconds": seconds,
        "truth": truth,
        "public_truth": PUBLIC.truth(),
        "choices": choice_counts(reps),
        "confidential_network": asdict(CONFIDENTIAL),
        "public_network": asdict(PUBLIC),
        "mean_seconds_per_release": {k: float(np.mean([r["seconds"][k] for r in reps])) for k in reps[0]["seconds"]},
    }
    (out / "results.json").write_text(json.dumps({"meta": meta, "rows": rows, "repetitions": reps}, indent=1) + "\n")
    text = markdown(rows, meta)
    (out / "results.md").write_text(text)
    plot(rows, out / "coverage.png", args.sets)
    logger.info("%s", text)
    logger.info("wrote %s, %s and %s", out / "results.json", out / "results.md", out / "coverage.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
