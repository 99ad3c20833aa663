"""Bowen & Liu's simulation studies (S-003 §4; METHODS.md §2.3), vectorised over repetitions.

Study 1 — binary data: x_i ~ Bernoulli(θ), n records, 9 scenarios (3 n × 3 θ). Methods and what
each releases, with the inference each supports:

- ``Ori``: the original data (Wald interval);
- ``MS``: traditional multiple synthesis without DP, 10 sets from Beta(s + 1/3, n − s + 1/3)
  (Kerman's neutral prior), Reiter's (2003) partial-synthesis rule;
- ``MD``: the beta-binomial / Dirichlet-multinomial synthesizer, 10 sets each ε/10 with
  a = n/(e^(ε/10) − 1) (dipsy's ``beta-binomial``), Reiter's rule;
- ``DP-prior``: one set from Binomial(n, (s + a)/(n + 2a)), a = 1/(e^(ε/n) − 1) (dipsy's ``dp-prior``);
- ``modips-thr`` / ``modips-trunc``: modips (Liu 2016), s* = s + discrete Laplace(10/ε) per set, thresholded to
  [0, n] or drawn from the Laplace truncated to [0, n], then θ* ~ Beta(s* + 1/3, n − s* + 1/3), 10 sets
  (``dipsy.methods.modips.bernoulli_sets``). Truncation is charged honestly in dipsy (its scale is doubled to
  stay ε-DP), so ``modips-trunc`` at ε is Bowen & Liu's truncation at ε/2;
- ``LS``: the Laplace sanitizer, s* = s + discrete Laplace(1/ε) (removal, Δ = 1) thresholded to
  [0, n], one set of n records from Binomial(n, s*/n) (dipsy's ``laplace-sanitizer``, add/remove).

Per method and ε: bias and RMSE of the point estimate, coverage and mean width of the 95 % interval,
and the share of usable repetitions (every set has 0 < θ̂ < 1, so a variance exists); averages are
over the usable repetitions. Where the paper's values were not recovered (METHODS.md marks them
[NR]) this script chooses: n ∈ {40, 100, 1000} (consistent with the bin counts of study 2),
θ ∈ {0.1, 0.25, 0.5}, ln ε ∈ {−10, −9, …, 4}.

Study 2 — normal data (the mean): Ori, MS, modips split and non-split (thresholding), the perturbed
histogram (10 sets) and the smoothed histogram (one set, the least δ); design choices at
``study2_scenario``. Study 3 (mixed data) is not yet here.

Writes ``build/bench/bowen_liu/study{1,2}.json`` and one PNG per study and metric. ``--reps 5000`` is the
paper's scale; the default is small enough for a minute or two.

Usage: python benchmarks/bowen_liu.py [--reps 200] [--seed 2016]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from dipsy.inference import combine
from dipsy.methods.dirichlet_multinomial import minimum_alpha
from dipsy.methods.dp_prior import minimum_prior
from dipsy.methods.histograms import least_delta
from dipsy.methods.modips import bernoulli_sets, normal_sets
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_laplace

OUT = Path(__file__).resolve().parents[1] / "build" / "bench" / "bowen_liu"
NS = (40, 100, 1000)
THETAS = (0.1, 0.25, 0.5)
LOG_EPSILONS = tuple(range(-10, 5))
SETS = 10
PRIOR = 1 / 3  # Kerman's (2011) neutral Beta prior, as Bowen & Liu cite
Z = 1.959963984540054


def wald(s: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """One set: θ̂ = s/n with variance θ̂(1 − θ̂)/n and a normal interval."""
    q = s / n
    half = Z * np.sqrt(q * (1 - q) / n)
    return {"estimate": q, "lower": q - half, "upper": q + half, "usable": (s > 0) & (s < n)}


def multiple(s_sets: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """m sets (reps, m): per set q = s/n, u = q(1 − q)/n, combined by Reiter's (2003) rule."""
    q = s_sets / n
    u = q * (1 - q) / n
    c = combine(q.T, u.T, "reiter2003-partial")
    usable = np.all((s_sets > 0) & (s_sets < n), axis=1)
    return {"estimate": c.estimate, "lower": c.lower, "upper": c.upper, "usable": usable}


def study1_scenario(n: int, theta: float, reps: int, rand: Randomness) -> dict[str, list[dict]]:
    rng = rand.numpy
    s = rng.binomial(n, theta, reps)
    rows: dict[str, list[dict]] = {name: [] for name in ("Ori", "MS", "MD", "modips-thr", "modips-trunc", "DP-prior", "LS")}
    ms_theta = rng.beta(s[:, None] + PRIOR, n - s[:, None] + PRIOR, (reps, SETS))
    static = {"Ori": wald(s, n), "MS": multiple(rng.binomial(n, ms_theta), n)}
    for log_eps in LOG_EPSILONS:
        eps = math.exp(log_eps)
        results = dict(static)
        a = minimum_alpha(n, eps / SETS)
        md_theta = rng.beta(s[:, None] + a, n - s[:, None] + a, (reps, SETS))
        results["MD"] = multiple(rng.binomial(n, md_theta), n)
        for name, post in (("modips-thr", "threshold"), ("modips-trunc", "truncation")):
            theta_star = bernoulli_sets(s, n, eps, SETS, post, rand, reps)
            results[name] = multiple(rng.binomial(n, theta_star), n)
        prior = minimum_prior(n, eps)
        results["DP-prior"] = wald(rng.binomial(n, (s + prior) / (n + 2 * prior)), n)
        noisy = np.clip(s + discrete_laplace(1 / eps, reps, rand), 0, n)
        results["LS"] = wald(rng.binomial(n, noisy / n), n)
        for name, r in results.items():
            rows[name].append(summarise(r, theta, log_eps))
    return rows


# -- study 2: normal data -------------------------------------------------------------------------------------
#
# x_i ~ N(0, σ²) truncated to public bounds that are not symmetric about the mean (the left one is
# closer, as in the paper): [-3σ, 4.3σ], a range of 7.3σ; bins data-independent, K = 7, 10, 21 for
# n = 40, 100, 1000 (the paper's median Scott bin counts; Scott's rule itself reads the data).
# Estimand: the mean μ. Per set q = x̄*, u = s*²/n.

NS2 = (40, 100, 1000)
SIGMAS = (1.0, 3.0, 5.0)
BINS = {40: 7, 100: 10, 1000: 21}
LOG_EPSILONS2 = tuple(range(-4, 7))


def truncated_normal(mu: np.ndarray, sigma2: np.ndarray, lower: float, upper: float, size: tuple, rng) -> np.ndarray:
    from scipy import stats

    sd = np.sqrt(sigma2)
    a, b = (lower - mu) / sd, (upper - mu) / sd
    return stats.truncnorm.rvs(a, b, loc=mu, scale=sd, size=size, random_state=rng)


def from_cells(p: np.ndarray, edges: np.ndarray, n: int, rng) -> np.ndarray:
    """n values per row of ``p`` (..., K): a cell by its probability, then uniform inside it."""
    cdf = np.cumsum(p, axis=-1)
    cdf /= cdf[..., -1:]
    u = rng.random((*p.shape[:-1], n))
    cell = (u[..., None] > cdf[..., None, :-1]).sum(axis=-1)
    lo, width = edges[:-1][cell], np.diff(edges)[cell]
    return lo + rng.random(cell.shape) * width


def mean_sets(values: np.ndarray) -> dict[str, np.ndarray]:
    """Sets (reps, m, n): q = x̄*, u = s*²/n, combined by Reiter's rule (one set: its own t interval)."""
    n = values.shape[-1]
    q, u = values.mean(axis=-1), values.var(axis=-1, ddof=1) / n
    rule = "reiter2003-partial" if q.shape[1] > 1 else "single"
    c = combine(q.T, u.T, rule, single_df=n - 1)
    return {"estimate": c.estimate, "lower": c.lower, "upper": c.upper, "usable": np.isfinite(c.variance)}


def study2_scenario(n: int, sigma: float, reps: int, rand: Randomness) -> dict[str, list[dict]]:
    rng = rand.numpy
    lower, upper = -3 * sigma, 4.3 * sigma
    x = truncated_normal(np.zeros(()), np.full((), sigma**2), lower, upper, (reps, n), rng)
    truth = float(__import__("scipy").stats.truncnorm.mean(-3, 4.3, scale=sigma))
    xbar, s2 = x.mean(axis=1), x.var(axis=1, ddof=1)
    edges = np.linspace(lower, upper, BINS[n] + 1)
    counts = np.stack([np.bincount(np.clip(np.searchsorted(edges[1:-1], row, side="right"), 0, BINS[n] - 1), minlength=BINS[n]) for row in x])
    sigma2_ms = (n - 1) * s2[:, None] / rng.chisquare(n - 1, (reps, SETS))
    mu_ms = rng.normal(xbar[:, None], np.sqrt(sigma2_ms / n))
    static = {
        "Ori": mean_sets(x[:, None, :]),
        "MS": mean_sets(rng.normal(mu_ms[..., None], np.sqrt(sigma2_ms)[..., None], (reps, SETS, n))),
    }
    rows: dict[str, list[dict]] = {k: [] for k in ("Ori", "MS", "modips-split", "modips-nonsplit", "PH", "SH")}
    for log_eps in LOG_EPSILONS2:
        eps = math.exp(log_eps)
        results = dict(static)
        for name, budget in (("modips-split", "split"), ("modips-nonsplit", "non-split")):
            mu, sig2 = normal_sets(xbar, s2, n, lower, upper, eps, SETS, budget, "threshold", rand, reps)
            sig2 = np.maximum(sig2, 1e-12 * sigma**2)
            results[name] = mean_sets(truncated_normal(mu[..., None], sig2[..., None], lower, upper, (reps, SETS, n), rng))
        noisy = counts[:, None, :] + discrete_laplace(SETS / eps, (reps, SETS, BINS[n]), rand)
        noisy = np.maximum(noisy, 0).astype(float)
        noisy[noisy.sum(axis=-1) == 0] = 1.0  # an all-zero table: uniform over the bins
        results["PH"] = mean_sets(from_cells(noisy, edges, n, rng))
        share = np.diff(edges) / (upper - lower)
        delta = least_delta(n, eps, float(share.min()))
        p = (1 - delta) * counts / n + delta * share
        results["SH"] = mean_sets(from_cells(p[:, None, :], edges, n, rng))
        for name, r in results.items():
            rows[name].append(summarise(r, truth, log_eps))
    return rows


def summarise(r: dict[str, np.ndarray], truth: float, log_eps: float) -> dict:
    ok = r["usable"]
    est, lo, hi = r["estimate"][ok], r["lower"][ok], r["upper"][ok]
    nan = float("nan")
    return {
        "log_epsilon": log_eps,
        "usable": float(ok.mean()),
        "bias": float(np.mean(est - truth)) if ok.any() else nan,
        "rmse": float(np.sqrt(np.mean((est - truth) ** 2))) if ok.any() else nan,
        "coverage": float(np.mean((lo <= truth) & (truth <= hi))) if ok.any() else nan,
        "width": float(np.mean(hi - lo)) if ok.any() else nan,
    }


def plot(results: dict, metric: str, path: Path, rows=NS, cols=THETAS, key="n={n}, theta={c}", label="θ", title="Study 1 (binary)") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), len(cols), figsize=(11, 8), sharex=True, constrained_layout=True)
    for i, n in enumerate(rows):
        for j, c in enumerate(cols):
            ax = axes[i, j]
            for name, series in results[key.format(n=n, c=c)].items():
                ax.plot([r["log_epsilon"] for r in series], [r[metric] for r in series], marker=".", label=name)
            if metric == "coverage":
                ax.axhline(0.95, color="grey", lw=0.8, ls="--")
            ax.set_title(f"n = {n}, {label} = {c}", fontsize=9)
            if i == len(rows) - 1:
                ax.set_xlabel("ln ε")
            if j == 0:
                ax.set_ylabel(metric)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"{title}: {metric} by ln ε")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2016)
    args = parser.parse_args()
    rand = Randomness.from_seed(args.seed)
    results = {f"n={n}, theta={theta}": study1_scenario(n, theta, args.reps, rand) for n in NS for theta in THETAS}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "study1.json").write_text(json.dumps({"reps": args.reps, "seed": args.seed, "results": results}, indent=1) + "\n")
    for metric in ("bias", "rmse", "coverage", "width"):
        plot(results, metric, OUT / f"study1_{metric}.png")
    results2 = {f"n={n}, sigma={sigma}": study2_scenario(n, sigma, args.reps, rand) for n in NS2 for sigma in SIGMAS}
    (OUT / "study2.json").write_text(json.dumps({"reps": args.reps, "seed": args.seed, "results": results2}, indent=1) + "\n")
    for metric in ("bias", "rmse", "coverage", "width"):
        plot(results2, metric, OUT / f"study2_{metric}.png", NS2, SIGMAS, "n={n}, sigma={c}", "σ", "Study 2 (normal, mean)")
    print(f"study 1 (binary), {args.reps} repetitions; results in {OUT}")
    shown = (-8, -4, 0, 4)
    print(f"{'scenario':20}{'method':10}" + "".join(f"{'ln ε = ' + str(e):>15}" for e in shown) + "   (RMSE  coverage)")
    for scenario, methods in results.items():
        for name, rows in methods.items():
            by = {r["log_epsilon"]: r for r in rows}
            print(f"{scenario:20}{name:10}" + "".join(f"{by[e]['rmse']:>9.3f} {by[e]['coverage']:>5.2f}" for e in shown))
    print(f"\nstudy 2 (normal, the mean); results in {OUT}")
    shown2 = (-2, 0, 2, 4)
    print(f"{'scenario':20}{'method':16}" + "".join(f"{'ln ε = ' + str(e):>15}" for e in shown2) + "   (RMSE  coverage)")
    for scenario, methods in results2.items():
        for name, rows in methods.items():
            by = {r["log_epsilon"]: r for r in rows}
            print(f"{scenario:20}{name:16}" + "".join(f"{by[e]['rmse']:>9.3f} {by[e]['coverage']:>5.2f}" for e in shown2))


if __name__ == "__main__":
    main()
