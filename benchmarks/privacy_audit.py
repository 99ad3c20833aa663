"""Exact privacy audit of the count methods on small cases: the largest privacy loss found vs ε.

For every method with a closed-form output pmf, enumerate every data set of n records over a few
cells, every substitution neighbour and every output, at the derived parameter and at half of it,
and report the largest log-ratio found. Writes ``build/bench/privacy_audit.json``.

Usage: python benchmarks/privacy_audit.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from dipsy.methods.dirichlet_multinomial import log_predictive, minimum_alpha
from dipsy.methods.dp_prior import log_likelihood, minimum_prior
from dipsy.methods.gamma_poisson import least_strength
from dipsy.privacy.audit import largest_privacy_loss

OUT = Path(__file__).resolve().parents[1] / "build" / "bench"
EXPOSURES = np.array([1.0, 3.0, 10.0])
RATE = 0.2


def gamma_poisson(strength: float):
    q = (1 + strength) / (2 + strength)

    def log_pmf(outputs, y):
        joint = stats.nbinom.logpmf(outputs, y + strength * RATE * EXPOSURES, q).sum(axis=-1)
        return joint - logsumexp(joint)

    return log_pmf


METHODS = {
    # name: (cells, derived parameter for (n, ε), log pmf for a parameter)
    "dirichlet-multinomial": (4, minimum_alpha, lambda a: lambda out, y: log_predictive(out, y, a)),
    "beta-binomial": (2, minimum_alpha, lambda a: lambda out, y: log_predictive(out, y, a)),
    "dp-prior": (3, minimum_prior, lambda a: lambda out, y: log_likelihood(out, y, a)),
    "gamma-poisson": (3, lambda n, e: least_strength(n, e, RATE, EXPOSURES), gamma_poisson),
}


def main() -> None:
    rows = []
    for name, (cells, derive, pmf) in METHODS.items():
        for epsilon in (0.5, 1.0, 5.0):
            at = max(largest_privacy_loss(pmf(derive(n, epsilon)), n, cells) for n in range(1, 7))
            below = min(largest_privacy_loss(pmf(0.5 * derive(n, epsilon)), n, cells) for n in range(1, 7))
            rows.append(
                {
                    "method": name,
                    "cells": cells,
                    "n": "1..6",
                    "epsilon": epsilon,
                    "largest_loss_at_derived": at,
                    "smallest_worst_loss_at_half": below,
                }
            )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "privacy_audit.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(f"{'method':24}{'cells':>6}{'ε':>6}{'max loss at derived':>22}{'min over n of max loss at half':>33}")
    for r in rows:
        print(
            f"{r['method']:24}{r['cells']:>6}{r['epsilon']:>6}{r['largest_loss_at_derived']:>22.9f}{r['smallest_worst_loss_at_half']:>33.6f}"
        )
    assert all(r["largest_loss_at_derived"] <= r["epsilon"] + 1e-9 < r["smallest_worst_loss_at_half"] for r in rows)
    print("every derived parameter holds its ε; every halved one breaks it")


if __name__ == "__main__":
    main()
