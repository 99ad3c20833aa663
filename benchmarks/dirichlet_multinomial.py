"""S-000's Dirichlet-multinomial synthesizer (Hu's lecture; METHODS.md §1), checked with dipsy's own code.

Claims of S-000 and how each is measured here:

- the least flat prior for ε-DP, ``α = n/(e^ε − 1)`` (eq. 13), at the CE Race example (n = 994,
  ε = 5): 6.742953 — from the plan :class:`~dipsy.methods.DirichletMultinomial` makes;
- the posterior mean of θ* is ``(y + α)/Σ(y + α)``: the mean of ``y*/n`` over ``--draws`` draws of
  :func:`~dipsy.methods.dirichlet_multinomial.draw_predictive`, every cell within 4 standard errors;
- the privacy bound ``ε = log((n + α)/α)`` (eqs. 11–13): the largest log ratio of the posterior
  predictive (:func:`~dipsy.methods.dirichlet_multinomial.log_predictive`, eq. 8) over every pair of
  neighbouring tables (one record moved, the same n) and every output, enumerated exactly on a small
  case (n = 4, 3 cells), is at most the bound, and reaches it;
- the R draws with ``set.seed(123)``: specific to R's generator, not reproduced (the distribution is
  checked instead).

Usage: python benchmarks/dirichlet_multinomial.py [--draws 20000]; about 10 s. Ends by recording the
rows in the fidelity table (benchmarks/fidelity.py).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity import Row, record  # noqa: E402 - a sibling script, not a package

from dipsy.domain import Domain  # noqa: E402
from dipsy.methods import DirichletMultinomial  # noqa: E402
from dipsy.methods.dirichlet_multinomial import draw_predictive, log_predictive, minimum_alpha  # noqa: E402
from dipsy.privacy import PureDP  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python benchmarks/dirichlet_multinomial.py"


def tables(n: int, cells: int) -> list[tuple[int, ...]]:
    """Every count vector of ``cells`` cells that sums to ``n``."""
    return [t for t in itertools.product(range(n + 1), repeat=cells) if sum(t) == n]


def largest_log_ratio(n: int, cells: int, alpha: float) -> float:
    """max over neighbours y ~ y' (one record moved) and outputs y* of |log p(y*|y) − log p(y*|y')|."""
    all_tables = tables(n, cells)
    outputs = np.array(all_tables, dtype=float)
    logp = {t: log_predictive(outputs, np.array(t), alpha) for t in all_tables}
    worst = 0.0
    for y in all_tables:
        for i, j in itertools.permutations(range(cells), 2):
            if y[i] == 0:
                continue
            z = list(y)
            z[i] -= 1
            z[j] += 1
            worst = max(worst, float(np.max(np.abs(logp[y] - logp[tuple(z)]))))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20000)
    args = parser.parse_args()

    data = pd.read_csv(ROOT / "examples" / "ce" / "CEdata.csv")
    y = data["Race"].value_counts().reindex(range(1, 7), fill_value=0).to_numpy()
    n, epsilon = int(y.sum()), 5.0
    plan = DirichletMultinomial(PureDP(epsilon)).plan(n, Domain.from_sizes({"Race": 6}))
    alpha = plan.parameters["alpha"]
    rows = [
        Row(
            "least flat prior for ε-DP, α = n/(e^ε − 1) (eq. 13), CE Race, n = 994, ε = 5",
            "6.742953",
            f"{alpha:.6f}",
            "agrees" if round(alpha, 6) == 6.742953 else "differs",
            "equal to 6 decimals",
            reproduce=COMMAND,
        )
    ]

    rng = np.random.default_rng(2026)
    shares = np.array([draw_predictive(y, alpha, rng) for _ in range(args.draws)]) / n
    expected = (y + alpha) / (y + alpha).sum()
    z = (shares.mean(axis=0) - expected) / (shares.std(axis=0, ddof=1) / math.sqrt(args.draws))
    rows.append(
        Row(
            "E[θ*] = (y + α)/Σ(y + α): the posterior predictive centres on the posterior mean",
            " ".join(f"{v:.4f}" for v in expected),
            " ".join(f"{v:.4f}" for v in shares.mean(axis=0)) + f" (largest |z| {np.abs(z).max():.2f})",
            "agrees" if np.abs(z).max() < 4 else "differs",
            f"every cell within 4 SE, {args.draws:,} draws of y*/n",
            reproduce=COMMAND,
        )
    )

    small_n, cells, small_epsilon = 4, 3, 1.0
    small_alpha = minimum_alpha(small_n, small_epsilon)
    bound = math.log((small_n + small_alpha) / small_alpha)
    worst = largest_log_ratio(small_n, cells, small_alpha)
    rows.append(
        Row(
            "the posterior predictive is ε-DP with ε = log((n + α)/α) (eqs. 11–13), substitute one record, n fixed",
            f"ε = {bound:.6f} (n = {small_n}, {cells} cells, α = {small_alpha:.6f})",
            f"largest log ratio {worst:.6f} over every neighbouring pair and output",
            "agrees" if worst <= bound + 1e-9 and worst >= bound - 1e-6 else "differs",
            "exact enumeration: at most the bound, and reaching it (the bound is tight)",
            reproduce=COMMAND,
        )
    )
    rows.append(
        Row(
            "one draw with R's set.seed(123): θ* = (0.7805, 0.1243, 0.0076, 0.0446, 0.0184, 0.0247)",
            "(776, 118, 6, 53, 22, 19)",
            "—",
            "not reproduced",
            "—",
            "specific to R's random number generator; the distribution of the draws is checked instead (row 2)",
        )
    )
    record("S-000", "Dirichlet-multinomial synthesizer (Hu, Data Confidentiality lecture)", rows)
    for r in rows:
        print(f"{r.verdict:>14}  {r.claim}: paper {r.paper}, dipsy {r.dipsy}")


if __name__ == "__main__":
    main()
