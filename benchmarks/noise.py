"""Cost of exact noise: dipsy's discrete samplers against NumPy's floating-point ones.

The job is the one a count method does: add noise to a table of 10^6 int64 cell counts. Cases:

- discrete Laplace at scale 1/ε for ε in {0.1, 1, 10} (a count query of sensitivity 1), against
  ``counts + Generator.laplace(0, 1/ε, n)`` — the float mechanism Mironov (2012) warns about;
- discrete Gaussian at σ in {1, 10, 100}, against ``counts + Generator.normal(0, σ, n)``.

Each exact case runs in secure mode (``os.urandom``, no seed: what a release uses) and in seeded
mode (NumPy's PCG64 under :meth:`Randomness.below`: what tests use). Times are the best of 3 in
one process, and each is given as a ratio to the NumPy float baseline timed in the same process
on the same vector. Writes ``build/bench/noise.json``.

Usage: python benchmarks/noise.py [--cells 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_gaussian, discrete_laplace

OUT = Path(__file__).resolve().parents[1] / "build" / "bench"
EPSILONS = (Fraction(1, 10), Fraction(1), Fraction(10))
SIGMAS = (1, 10, 100)


def best_of(repeats: int, job) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        job()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    counts = np.random.default_rng(2026).poisson(20, args.cells).astype(np.int64)
    float_rng = np.random.default_rng(1)
    modes = {"secure": lambda: Randomness.from_seed(None), "seeded": lambda: Randomness.from_seed(1)}

    rows = []
    for eps in EPSILONS:
        scale = 1 / eps
        baseline = best_of(args.repeats, lambda scale=scale: counts + float_rng.laplace(0.0, float(scale), counts.size))
        for mode, make in modes.items():
            rand = make()
            seconds = best_of(args.repeats, lambda scale=scale, rand=rand: counts + discrete_laplace(scale, counts.size, rand))
            rows.append(
                {
                    "sampler": "discrete_laplace",
                    "parameter": f"scale=1/eps, eps={eps}",
                    "mode": mode,
                    "seconds": seconds,
                    "numpy_seconds": baseline,
                    "ratio": seconds / baseline,
                    "ns_per_cell": seconds / counts.size * 1e9,
                }
            )
    for sigma in SIGMAS:
        baseline = best_of(args.repeats, lambda sigma=sigma: counts + float_rng.normal(0.0, float(sigma), counts.size))
        for mode, make in modes.items():
            rand = make()
            seconds = best_of(
                args.repeats, lambda sigma=sigma, rand=rand: counts + discrete_gaussian(sigma * sigma, counts.size, rand)
            )
            rows.append(
                {
                    "sampler": "discrete_gaussian",
                    "parameter": f"sigma={sigma}",
                    "mode": mode,
                    "seconds": seconds,
                    "numpy_seconds": baseline,
                    "ratio": seconds / baseline,
                    "ns_per_cell": seconds / counts.size * 1e9,
                }
            )

    report = {
        "cells": args.cells,
        "repeats": args.repeats,
        "numpy": np.__version__,
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "results": rows,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "noise.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"noise on {args.cells:,} int64 cells, best of {args.repeats} (written to {OUT / 'noise.json'})")
    print(f"{'sampler':19}{'parameter':24}{'mode':8}{'seconds':>9}{'numpy s':>9}{'ratio':>7}{'ns/cell':>9}")
    for r in rows:
        print(
            f"{r['sampler']:19}{r['parameter']:24}{r['mode']:8}{r['seconds']:9.3f}{r['numpy_seconds']:9.4f}"
            f"{r['ratio']:7.1f}{r['ns_per_cell']:9.0f}"
        )


if __name__ == "__main__":
    main()
