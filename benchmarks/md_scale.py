"""Scale of the Dirichlet-multinomial synthesizer: one set over 10^7 cells from 10^6 records.

Each case runs in a fresh child process (so its peak memory is its own) on the same data:

- ``numpy-floor``: NumPy's own ``Generator.gamma`` + ``Generator.multinomial`` over the same
  10^7 cells, given the counts — what any implementation of eqs. 6–7 must pay;
- ``dipsy-dataframe``: ``dipsy.synthesize`` on a DataFrame (NumPy engine): count the cells,
  draw theta* and y*, turn counts into 10^6 decoded, shuffled records;
- ``dipsy-parquet``: the same from a Parquet file (DuckDB engine, the default for files).

Reported per case: wall seconds, peak of memory allocated during the job (tracemalloc, which
sees NumPy's buffers), and the process's peak resident set; and the ratios of dipsy's time and
memory to the NumPy floor measured in the same run. Writes ``build/bench/md_scale.json``.

Usage: python benchmarks/md_scale.py [--cells-a 1000] [--cells-b 10000] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import resource
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parents[1] / "build" / "bench"
EPSILON = 1.0


def make_data(a: int, b: int, rows: int, folder: Path) -> Path:
    """Skewed records over an a x b domain: most cells empty, as in real sparse tables."""
    rng = np.random.default_rng(2026)
    col_a = np.minimum(rng.zipf(1.3, rows) - 1, a - 1)
    col_b = (col_a * 37 + rng.geometric(0.001, rows)) % b
    frame = pd.DataFrame({"a": col_a.astype(np.int64), "b": col_b.astype(np.int64)})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "md_scale.parquet"
    frame.to_parquet(path, index=False)
    counts = np.bincount(np.ravel_multi_index((frame["a"].to_numpy(), frame["b"].to_numpy()), (a, b)), minlength=a * b)
    np.save(folder / "md_scale_counts.npy", counts)
    return path


def _measure(job) -> dict:
    tracemalloc.start()
    start = time.perf_counter()
    detail = job()
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "seconds": seconds,
        "allocated_peak_mb": peak / 2**20,
        "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **detail,
    }


def numpy_floor(folder: str, a: int, b: int) -> dict:
    counts = np.load(Path(folder) / "md_scale_counts.npy")
    n = int(counts.sum())
    alpha = n / np.expm1(EPSILON)

    def job() -> dict:
        rng = np.random.default_rng(1)
        theta = rng.gamma(counts + alpha)
        theta /= theta.sum()
        ystar = rng.multinomial(n, theta)
        return {"rows": int(ystar.sum())}

    return _measure(job)


def dipsy_case(folder: str, a: int, b: int, source: str) -> dict:
    import dipsy

    domain = dipsy.Domain.from_sizes({"a": a, "b": b})
    data = Path(folder) / "md_scale.parquet"
    if source == "dataframe":
        data = pd.read_parquet(data)

    def job() -> dict:
        release = dipsy.synthesize(
            data, domain, epsilon=EPSILON, seed=1, accept_noise=True, ledger=False
        )  # a speed benchmark, not a release
        return {"rows": len(release.tables[0]), "alpha": release.parameters["alpha"]}

    return _measure(job)


def run_child(fn, *args) -> dict:
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells-a", type=int, default=1000)
    parser.add_argument("--cells-b", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    a, b = args.cells_a, args.cells_b
    make_data(a, b, args.rows, OUT)
    results = {
        "numpy-floor": run_child(numpy_floor, str(OUT), a, b),
        "dipsy-dataframe": run_child(dipsy_case, str(OUT), a, b, "dataframe"),
        "dipsy-parquet": run_child(dipsy_case, str(OUT), a, b, "parquet"),
    }
    floor = results["numpy-floor"]
    for name in ("dipsy-dataframe", "dipsy-parquet"):
        r = results[name]
        r["time_ratio_to_floor"] = r["seconds"] / floor["seconds"]
        r["allocated_ratio_to_floor"] = r["allocated_peak_mb"] / floor["allocated_peak_mb"]
        r["allocated_bytes_per_cell"] = r["allocated_peak_mb"] * 2**20 / (a * b)
    report = {
        "cells": a * b,
        "rows": args.rows,
        "epsilon": EPSILON,
        "machine": platform.machine(),
        "cpus": mp.cpu_count(),
        "results": results,
    }
    (OUT / "md_scale.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"one synthetic set, {a * b:,} cells, {args.rows:,} records (written to {OUT / 'md_scale.json'})")
    print(f"{'case':18}{'seconds':>9}{'alloc MB':>10}{'RSS MB':>9}{'time/floor':>12}{'alloc/floor':>12}")
    for name, r in results.items():
        ratios = f"{r['time_ratio_to_floor']:12.2f}{r['allocated_ratio_to_floor']:12.2f}" if name != "numpy-floor" else ""
        print(f"{name:18}{r['seconds']:9.2f}{r['allocated_peak_mb']:10.0f}{r['rss_peak_mb']:9.0f}{ratios}")


if __name__ == "__main__":
    main()
