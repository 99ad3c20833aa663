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

Writes ``build/bench/bowen_liu/study1.json`` and one PNG per metric. ``--reps 5000`` is the
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
from dipsy.methods.modips import bernoulli_sets
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


def plot(results: dict, metric: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(NS), len(THETAS), figsize=(11, 8), sharex=True, constrained_layout=True)
    for i, n in enumerate(NS):
        for j, theta in enumerate(THETAS):
            ax = axes[i, j]
            for name, rows in results[f"n={n}, theta={theta}"].items():
                ax.plot([r["log_epsilon"] for r in rows], [r[metric] for r in rows], marker=".", label=name)
            if metric == "coverage":
                ax.axhline(0.95, color="grey", lw=0.8, ls="--")
            ax.set_title(f"n = {n}, θ = {theta}", fontsize=9)
            if i == len(NS) - 1:
                ax.set_xlabel("ln ε")
            if j == 0:
                ax.set_ylabel(metric)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"Study 1 (binary): {metric} of the 95% interval / estimate by ln ε")
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
    print(f"study 1 (binary), {args.reps} repetitions; results in {OUT}")
    shown = (-8, -4, 0, 4)
    print(f"{'scenario':20}{'method':10}" + "".join(f"{'ln ε = ' + str(e):>15}" for e in shown) + "   (RMSE  coverage)")
    for scenario, methods in results.items():
        for name, rows in methods.items():
            by = {r["log_epsilon"]: r for r in rows}
            print(f"{scenario:20}{name:10}" + "".join(f"{by[e]['rmse']:>9.3f} {by[e]['coverage']:>5.2f}" for e in shown))


if __name__ == "__main__":
    main()
