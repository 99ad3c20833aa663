"""How dipsy's counting grows with n: generated Adult-like files of 10⁵ to 10⁸ rows (first part).

**Data.** A Chow–Liu tree fitted to Adult's exact one- and two-way counts (``shared/data/adult``;
the tree and its conditionals are this benchmark's fixed, public generator, not a release): the
spanning tree of largest total mutual information, rooted at the first column, each column drawn
given its parent from the pair's counts plus ½ (so no conditional is empty). Records are drawn in
chunks of 10⁶ and written as Parquet row groups, so generating never holds more than a chunk; the
file for (n, seed) is made once under ``build/bench/scale/data/`` and reused. Utility is measurable
against the generator: its one- and two-way marginals are known exactly.

**Counting.** For each n, in a fresh child process each (so peak memory is the case's own):

- ``duckdb-group-by``: DuckDB's own ``SELECT col, count(*) … GROUP BY col`` for every column and
  for the 91 pairs, on the same file — the floor any out-of-core counter pays;
- ``dipsy-duckdb``: dipsy's DuckDB engine (the default for files) answering the same 14 one-way and
  91 two-way contingency tables, validation of every value against the domain included.

Reported: wall seconds and the child's peak resident memory (``wait4``), each the median of
``--repeats`` runs (default 3, the cases alternating), and dipsy's time as a ratio to the floor
measured in the same run (goal ≤ 1.2). Writes ``build/bench/scale/counting.json`` and
``counting.md``.

Usage: python benchmarks/scale.py [--rows 100000 1000000 10000000] [--seed 0] [--repeats 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
ADULT = SHARED / "data" / "adult"
OUT = ROOT / "build" / "bench" / "scale"
CHUNK = 1_000_000


def sizes() -> dict[str, int]:
    return json.loads((ADULT / "adult-domain.json").read_text())


def chow_liu(codes: np.ndarray, k: list[int]) -> list[tuple[int, int]]:
    """(child, parent) edges of the maximum mutual-information spanning tree, parents first (Prim)."""
    d, n = codes.shape[1], len(codes)
    mi = np.zeros((d, d))
    for a, b in itertools.combinations(range(d), 2):
        joint = np.bincount(codes[:, a] * k[b] + codes[:, b], minlength=k[a] * k[b]).reshape(k[a], k[b]) / n
        outer = joint.sum(1, keepdims=True) * joint.sum(0, keepdims=True)
        nz = joint > 0
        mi[a, b] = mi[b, a] = float((joint[nz] * np.log(joint[nz] / outer[nz])).sum())
    inside, edges = {0}, []
    while len(inside) < d:
        child, parent = max(((c, p) for p in inside for c in range(d) if c not in inside), key=lambda e: mi[e[1], e[0]])
        edges.append((child, parent))
        inside.add(child)
    return edges


def generator():
    """The fitted tree: root marginal and each child's conditional given its parent."""
    k = sizes()
    names = list(k)
    adult = pd.read_csv(ADULT / "adult.csv", usecols=names)[names].to_numpy(np.int64)
    shape = [k[c] for c in names]
    edges = chow_liu(adult, shape)
    root = (np.bincount(adult[:, 0], minlength=shape[0]) + 0.5)
    conditionals = {}
    for child, parent in edges:
        joint = np.bincount(adult[:, parent] * shape[child] + adult[:, child],
                            minlength=shape[parent] * shape[child]).reshape(shape[parent], shape[child]) + 0.5
        conditionals[child] = (parent, np.cumsum(joint / joint.sum(1, keepdims=True), axis=1))
    return names, shape, root / root.sum(), edges, conditionals


def draw(model, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    names, shape, root, edges, conditionals = model
    out = np.empty((len(names), n), dtype=np.int64)
    out[0] = rng.choice(shape[0], size=n, p=root)
    for child, _ in edges:
        parent, cdf = conditionals[child]
        u = rng.random(n)
        out[child] = np.minimum((u[:, None] > cdf[out[parent]]).sum(1), shape[child] - 1)
    return {name: out[j].astype(np.int16) for j, name in enumerate(names)}


def data_file(n: int, seed: int) -> Path:
    """The Parquet file of n generated rows (made once, in row groups of at most 10⁶)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = OUT / "data" / f"adult-tree-{n}-seed{seed}.parquet"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    model, rng = generator(), np.random.default_rng(seed)
    partial = path.with_suffix(".partial")
    writer = None
    for start in range(0, n, CHUNK):
        table = pa.table(draw(model, min(CHUNK, n - start), rng))
        writer = writer or pq.ParquetWriter(partial, table.schema)
        writer.write_table(table)
    writer.close()
    partial.rename(path)  # only a complete file gets the final name
    return path


# --- the cases, each in its own child process ----------------------------------------------------


def case_duckdb(path: str) -> None:
    import duckdb

    con = duckdb.connect()
    names = list(sizes())
    for name in names:
        con.execute(f'SELECT "{name}", count(*) FROM read_parquet(?) GROUP BY 1', [path]).fetchnumpy()
    for a, b in itertools.combinations(names, 2):
        con.execute(f'SELECT "{a}", "{b}", count(*) FROM read_parquet(?) GROUP BY 1, 2', [path]).fetchnumpy()


def case_dipsy(path: str) -> None:
    from dipsy.domain import Domain
    from dipsy.engine import engine_for

    names = list(sizes())
    engine = engine_for(path, Domain.from_sizes(sizes()))
    engine.ensure_valid()
    for name in names:
        engine.contingency((name,))
    for pair in itertools.combinations(names, 2):
        engine.contingency(pair)


CASES = {"duckdb-group-by": case_duckdb, "dipsy-duckdb": case_dipsy}


def run_child(case: str, path: Path) -> dict:
    """Run one case in a fresh interpreter; wall time from the parent, peak memory from wait4."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, __file__, "--child", case, str(path)])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{case} on {path} failed")
    return {"case": case, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", nargs="+", type=int, default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case; the median is reported")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--generate", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate:
        data_file(*args.generate)
        return
    if args.child:
        CASES[args.child[0]](args.child[1])
        return
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for n in args.rows:
        t = time.monotonic()
        # generated in a child: a parent grown by the draws would be counted in each forked child's peak
        subprocess.run([sys.executable, __file__, "--generate", str(n), str(args.seed)], check=True)
        path = data_file(n, args.seed)
        print(f"n = {n:,}: data {path.stat().st_size / 2**20:.0f} MB ({time.monotonic() - t:.0f} s)", flush=True)
        row = {"rows": n, "file_mb": path.stat().st_size / 2**20}
        # the cases alternate, and each time is the median of --repeats runs: on a shared 2-core
        # machine one run of the floor varied from 8 to 15 s at 10⁷ rows
        runs = {case: [] for case in CASES}
        for _ in range(args.repeats):
            for case in CASES:
                runs[case].append(run_child(case, path))
        for case, got in runs.items():
            row[case] = {key: float(np.median([g[key] for g in got])) for key in ("wall_s", "cpu_s", "peak_mb")}
            row[case]["walls"] = [g["wall_s"] for g in got]
            print(f"  {case}: {row[case]['wall_s']:.1f} s (median of {len(got)}), {row[case]['peak_mb']:.0f} MB", flush=True)
        row["ratio"] = row["dipsy-duckdb"]["wall_s"] / row["duckdb-group-by"]["wall_s"]
        results.append(row)
    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "python": platform.python_version()}
    (OUT / "counting.json").write_text(json.dumps({"machine": machine, "results": results}, indent=1))
    lines = ["| n | file MB | DuckDB GROUP BY s | MB | dipsy (DuckDB engine) s | MB | time ratio |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        g, d = r["duckdb-group-by"], r["dipsy-duckdb"]
        lines.append(f"| {r['rows']:,} | {r['file_mb']:.0f} | {g['wall_s']:.1f} | {g['peak_mb']:.0f} | {d['wall_s']:.1f} | {d['peak_mb']:.0f} | {r['ratio']:.2f} |")
    (OUT / "counting.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
