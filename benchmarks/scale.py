"""How dipsy's time and memory grow with n: generated Adult-like files of 10⁵ to 10⁸ rows.

**Data.** A Chow–Liu tree fitted to Adult's exact one- and two-way counts (``shared/data/adult``;
the tree and its conditionals are this benchmark's fixed, public generator, not a release): the
spanning tree of largest total mutual information, rooted at the first column, each column drawn
given its parent from the pair's counts plus ½ (so no conditional is empty). Records are drawn in
chunks of 10⁶ and written as Parquet row groups, so generating never holds more than a chunk; the
file for (n, seed) is made once under ``build/bench/scale/data/`` and reused. Utility is measurable
against the generator: its one- and two-way marginals are known exactly.

**Counting** (``--parts counting``). For each n, in a fresh child process each (so peak memory is
the case's own):

- ``duckdb-group-by``: DuckDB's own ``SELECT col, count(*) … GROUP BY col`` for every column and
  for the 91 pairs, on the same file — the floor any out-of-core counter pays;
- ``dipsy-duckdb``: dipsy's DuckDB engine (the default for files) answering the same 14 one-way and
  91 two-way contingency tables, validation of every value against the domain included;
- with ``--engines spark``, ``spark-group-by``: Spark's own ``spark.read.parquet(file)
  .groupBy(cols).count()`` of the same 105 tables, each collected as Arrow, in dipsy's Spark
  session (local mode, the same settings);
- and ``dipsy-spark``: dipsy's Spark engine answering the same tables, validation included.

Reported: wall seconds and the child's peak resident memory (``wait4``), each the median of
``--repeats`` runs (the cases alternating), dipsy's time as a ratio to the floor measured in the
same run (goals: ≤ 1.2 on DuckDB, ≤ 2 on Spark), and a check that counting 10⁷ rows or more
peaks below :data:`COUNTING_BOUND_MB`. The Spark cases' seconds leave out the interpreter's and
the JVM's start (the session's start, about 15 s, is reported apart), timed in the child from the
session's start on, and their peak memory adds the JVM's (a child of the case's process).
Writes ``counting.json`` and ``counting.md``.

**Stages** (``--parts stages``). One seeded release per method (:data:`METHODS`), n and engine, in
a fresh child: ``dipsy.synthesize(..., stream=True)`` written to disk, then read back chunk by
chunk with :func:`dipsy.release_sets.read_set` (every record checked against the domain). Each
stage's exclusive wall time and peak resident memory (:class:`Stages`): validation, counting (the
engine's queries of the confidential file), measurement (the method's fit less its counting, with
dpsyn's reading of its public file), synthesis, writing, reading back. Each method's counting is
compared with DuckDB's ``GROUP BY`` of the very tables it asked for, on the same file; each
release with the generator's exact marginals (:func:`utility`). Results gather in ``stages.json`` across invocations (e.g. Spark runs apart);
``stages.md`` and ``stages.png`` show them all.

Usage: python benchmarks/scale.py [--rows 100000 1000000 10000000] [--parts counting stages]
       [--methods ...] [--engines duckdb spark] [--max-rows METHOD N] [--repeats 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
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
#: Peak resident memory the whole process may reach counting the 105 tables of 10⁷ or more rows.
COUNTING_BOUND_MB = 600


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
    root = np.bincount(adult[:, 0], minlength=shape[0]) + 0.5
    conditionals = {}
    for child, parent in edges:
        joint = (
            np.bincount(adult[:, parent] * shape[child] + adult[:, child], minlength=shape[parent] * shape[child]).reshape(
                shape[parent], shape[child]
            )
            + 0.5
        )
        conditionals[child] = (parent, np.cumsum(joint / joint.sum(1, keepdims=True), axis=1))
    return names, shape, root / root.sum(), edges, conditionals


def true_marginals(model) -> dict[tuple[str, ...], np.ndarray]:
    """The generator's exact one-way marginals and the joint of each tree edge (parent, child):
    what a release of generated rows is measured against (its utility, free of sampling error)."""
    names, shape, root, edges, conditionals = model
    one = {0: root}
    out = {(names[0],): root}
    for child, _ in edges:  # parents come first
        parent, cdf = conditionals[child]
        conditional = np.diff(cdf, axis=1, prepend=0.0)
        one[child] = one[parent] @ conditional
        out[(names[child],)] = one[child]
        out[(names[parent], names[child])] = one[parent][:, None] * conditional
    return out


def utility(chunks, model) -> dict[str, float]:
    """Mean total variation distance between the release's one-way (and tree-edge two-way)
    marginals and the generator's, over those whose columns the release has."""
    truth = true_marginals(model)
    counts: dict[tuple[str, ...], np.ndarray] = {}
    for chunk in chunks:
        for cols, p in truth.items():
            if all(c in chunk.columns for c in cols):
                cells = np.ravel_multi_index(tuple(chunk[c].to_numpy(np.int64) for c in cols), p.shape)
                counts[cols] = counts.get(cols, 0) + np.bincount(cells, minlength=p.size)
    tv = {
        k: [0.5 * float(np.abs(c / max(c.sum(), 1) - truth[cols].ravel()).sum()) for cols, c in counts.items() if len(cols) == k]
        for k in (1, 2)
    }
    return {f"tv_{k}way": float(np.mean(v)) if v else float("nan") for k, v in tv.items()}


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


def one_and_two_way() -> list[tuple[str, ...]]:
    """The 14 one-way and 91 two-way tables of the counting part."""
    names = list(sizes())
    return [(name,) for name in names] + list(itertools.combinations(names, 2))


def group_by_each(path: str, tables) -> None:
    """DuckDB's own ``GROUP BY`` of each table (a list of column names) from the file."""
    import duckdb

    con = duckdb.connect()
    for columns in tables:
        cols = ", ".join(f'"{c}"' for c in columns)
        con.execute(f"SELECT {cols}, count(*) FROM read_parquet(?) GROUP BY ALL", [path]).fetchnumpy()


def case_duckdb(path: str) -> None:
    group_by_each(path, one_and_two_way())


def case_dipsy(path: str) -> None:
    from dipsy.domain import Domain
    from dipsy.engine import engine_for

    engine = engine_for(path, Domain.from_sizes(sizes()))
    engine.ensure_valid()
    for table in one_and_two_way():
        engine.contingency(table)


def case_spark(path: str) -> None:
    """Spark's own ``groupBy`` of each table, in dipsy's session; prints the seconds as JSON."""

    def count(spark) -> None:
        data = spark.read.parquet(path)
        for table in one_and_two_way():
            data.groupBy(*table).count().toArrow()

    timed_in_session(count)


def case_dipsy_spark(path: str) -> None:
    """dipsy's Spark engine: validation, then each table; prints the seconds as JSON."""
    from dipsy.domain import Domain
    from dipsy.engine.spark_engine import SparkEngine

    def count(spark) -> None:
        engine = SparkEngine(path, Domain.from_sizes(sizes()))
        engine.ensure_valid()
        for table in one_and_two_way():
            engine.contingency(table)
        engine.close()

    timed_in_session(count)


def timed_in_session(count) -> None:
    """Start dipsy's Spark session, run ``count(spark)``, stop the session; print as JSON the
    session's start and the count's seconds, this process's peak memory and the JVM's (reaped once
    stopped; wait4 in the parent sees only the larger of the two)."""
    import resource

    from dipsy.engine.spark_engine import spark_session, stop_session

    start = time.perf_counter()
    spark = spark_session()
    started = time.perf_counter()
    count(spark)
    done = time.perf_counter()
    stop_session()
    python, jvm = (resource.getrusage(who).ru_maxrss / 1024 for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(json.dumps({"session_s": started - start, "work_s": done - started, "python_mb": python, "jvm_mb": jvm}))


CASES = {
    "duckdb-group-by": case_duckdb,
    "dipsy-duckdb": case_dipsy,
    "spark-group-by": case_spark,
    "dipsy-spark": case_dipsy_spark,
}
#: The counting part's cases per engine: the floor, then dipsy.
ENGINE_CASES = {"duckdb": ("duckdb-group-by", "dipsy-duckdb"), "spark": ("spark-group-by", "dipsy-spark")}

# --- a release, stage by stage ---------------------------------------------------------------------

#: The releases timed stage by stage: method, columns (None: all 14), budget, options. privsyn
#: and dpsyn draw 10⁵ records at every n (their rows option): GUM's time grows with the records
#: it updates (10⁶ on this machine: 153 s for privsyn, 603 s for dpsyn), not with n; the count
#: methods draw about n records. aim draws 10⁸ records at every n, a chunk of 10⁶ at a time from
#: its fitted model: a census-size release, its memory bounded by the chunk; i.i.d. as drawn (its
#: local search runs by default only on releases of at most 10⁶ records).
METHODS = {
    "dirichlet-multinomial": dict(columns=["sex", "race", "income>50K"], epsilon=1.0),
    "laplace-sanitizer": dict(columns=["education-num", "marital-status", "race", "sex", "income>50K"], epsilon=1.0),
    "privsyn": dict(columns=None, epsilon=1.0, delta=1e-9, options={"rows": 100_000}),
    "dpsyn": dict(columns=None, epsilon=1.0, delta=1e-9, options={"groups": "race,sex", "rows": 100_000}),
    "aim": dict(columns=None, epsilon=1.0, delta=1e-9, options={"rows": 100_000_000}),
}
STAGES = ("validation", "counting", "measurement", "synthesis", "writing", "reading back", "other")
PUBLIC_ROWS = 100_000  # dpsyn's public file: drawn from the same generator with another seed (public by construction)


class Stages:
    """Exclusive wall time and peak resident memory per stage, stages nested as calls nest.

    Peak memory per stage from the kernel's high-water mark (VmHWM), reset at each change of
    stage (``/proc/self/clear_refs``), so each stage's peak is its own."""

    def __init__(self) -> None:
        self.stack, self.time, self.peak, self.mark = ["other"], {}, {}, time.perf_counter()
        self._reset()

    @staticmethod
    def _hwm() -> float:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024

    @staticmethod
    def _reset() -> None:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    def switch(self, push: str | None) -> None:
        now, top = time.perf_counter(), self.stack[-1]
        self.time[top] = self.time.get(top, 0.0) + now - self.mark
        self.peak[top] = max(self.peak.get(top, 0.0), self._hwm())
        self._reset()
        self.stack.append(push) if push else self.stack.pop()
        self.mark = time.perf_counter()

    def wrap(self, owner, name: str, stage: str, generator: bool = False, when=None) -> None:
        """Time calls of ``owner.name`` as ``stage``; with ``when``, only calls on an object it accepts."""
        inner = getattr(owner, name)

        def timed(*args, **kwargs):
            if when is not None and not when(args[0]):
                return inner(*args, **kwargs)
            self.switch(stage)
            try:
                out = inner(*args, **kwargs)
            finally:
                self.switch(None)
            return self.timed_iter(out, stage) if generator else out

        setattr(owner, name, timed)

    def timed_iter(self, it, stage: str):
        it = iter(it)
        while True:
            self.switch(stage)
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                self.switch(None)
            yield item


def case_stages(method: str, path: str, out: str, engine: str) -> None:
    """One release of ``method`` from ``path``, streamed to ``out``, then read back; prints JSON."""
    import dipsy
    import dipsy.api
    import dipsy.release
    from dipsy.domain import Domain
    from dipsy.engine.base import Engine
    from dipsy.methods import get
    from dipsy.methods.base import Model
    from dipsy.release_sets import read_set

    stages, queries = Stages(), []
    record = Engine.contingency

    # Only the confidential file's queries are counting: dpsyn's public file is read in its fit
    # (measurement), and the GROUP BY floor is run on the confidential file.
    def confidential(engine) -> bool:
        return Path(engine.path) == Path(path)

    def contingency(self, columns=None, form="auto"):
        if confidential(self):
            queries.append(list(columns or self.domain.names))
        return record(self, columns, form)

    Engine.contingency = contingency
    from dipsy.engine.duckdb_engine import DuckDBEngine

    classes = [DuckDBEngine]  # dpsyn's public data are read by DuckDB whatever the engine
    if engine == "spark":
        from dipsy.engine.spark_engine import SparkEngine

        classes.append(SparkEngine)
    for cls in classes:
        stages.wrap(cls, "_validate", "validation", when=confidential)
        for name in ("_cell_counts", "_values", "_raw_counts"):
            stages.wrap(cls, name, "counting", when=confidential)
    stages.wrap(get(method), "fit", "measurement")
    stages.wrap(Model, "draw_chunks", "synthesis", generator=True)
    stages.wrap(dipsy.api, "decode", "synthesis")
    stages.wrap(dipsy.release.Release, "save", "writing")
    config = METHODS[method]
    options = dict(config.get("options", {}))
    if method == "dpsyn":
        options["public"] = str(data_file(PUBLIC_ROWS, 1))
    release = dipsy.synthesize(
        path,
        Domain.from_sizes(sizes()),
        method,
        epsilon=config["epsilon"],
        delta=config.get("delta"),
        columns=config["columns"],
        options=options,
        seed=0,
        ledger=Path(out).with_suffix(".sqlite"),
        stream=True,
        accept_noise=True,
        on_release=lambda r: r.save(out, overwrite=True, engine=engine),
        engine=engine,
    )
    stages.switch("reading back")
    rows = sum(len(chunk) for chunk in read_set(Path(out) / "synthetic_1", release.domain))
    stages.switch(None)
    stages.switch(None)  # close "other"
    got = {"time": stages.time, "peak": stages.peak, "rows": rows, "queries": queries}
    got |= utility(read_set(Path(out) / "synthetic_1", release.domain), generator())  # a second reading, untimed
    if engine == "spark":  # Spark's JVM is a child process: its peak once it has stopped and been waited for
        import resource

        from dipsy.engine.spark_engine import stop_session

        stop_session()
        got["jvm_peak_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps(got))


def case_floor(path: str, queries_file: str) -> None:
    """DuckDB's own GROUP BY for each table a method asked for, on the same file."""
    import duckdb  # noqa: F401  (imported before the clock starts, as the counting stage's was)

    start = time.perf_counter()
    group_by_each(path, json.loads(Path(queries_file).read_text()))
    print(time.perf_counter() - start)


def run_child(case: str, path: Path) -> dict:
    """Run one case in a fresh interpreter; wall time from the parent, peak memory from wait4, and
    what the child prints as JSON on its last line (the Spark cases' own times)."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, __file__, "--child", case, str(path)], stdout=subprocess.PIPE, text=True)
    text = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{case} on {path} failed")
    got = {"case": case, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}
    lines = text.strip().splitlines()
    return got | (json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {})


def run_stages(method: str, path: Path, engine: str) -> dict:
    """One release in a fresh interpreter, stage by stage, and the GROUP BY floor of its queries."""
    out = OUT / "releases" / f"{method}-{engine}"
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child-stages", method, str(path), str(out), engine], stdout=subprocess.PIPE, text=True
    )
    text = proc.stdout.read()
    _, status, _ = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{method} on {path} with {engine} failed")
    got = json.loads(text.strip().splitlines()[-1])
    # the process's peak is the largest stage peak: resetting VmHWM resets ru_maxrss too
    got |= {"wall_s": time.monotonic() - start, "peak_mb": max(got["peak"].values())}
    queries = OUT / "releases" / f"{method}-{engine}-queries.json"
    queries.write_text(json.dumps(got.pop("queries")))
    # the queries' own time, as the counting stage's is (no interpreter start in either)
    floor = subprocess.run(
        [sys.executable, __file__, "--child-floor", str(path), str(queries)], check=True, capture_output=True, text=True
    )
    got["floor_s"] = float(floor.stdout.strip().splitlines()[-1])
    shutil.rmtree(out, ignore_errors=True)  # a 10⁸-row release is gigabytes
    return got


def stages_report(results: list[dict]) -> None:
    """stages.md (one row per n, method, engine) and stages.png (each stage's cost curve)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = sorted(results, key=lambda r: (list(METHODS).index(r["method"]), r["engine"], r["rows_in"]))
    lines = [
        "| n | method | engine | " + " | ".join(STAGES) + " | peak MB | counting / GROUP BY | TV one-way / tree pairs |",
        "|---:|---|---|" + "---:|" * (len(STAGES) + 3),
    ]
    for r in results:
        cells = [f"{r['time'].get(s, 0):.1f} s, {r['peak'].get(s, 0):.0f} MB" if s in r["time"] else "—" for s in STAGES]
        ratio = r["time"].get("counting", 0) / r["floor_s"] if r["floor_s"] else float("nan")
        jvm = f" (+ JVM {r['jvm_peak_mb']:.0f})" if "jvm_peak_mb" in r else ""
        tv = " / ".join(f"{r[k]:.4f}" if r.get(k) == r.get(k) and k in r else "—" for k in ("tv_1way", "tv_2way"))
        lines.append(
            f"| {r['rows_in']:,} | {r['method']} | {r['engine']} | "
            + " | ".join(cells)
            + f" | {r['peak_mb']:.0f}{jvm} | {ratio:.2f} | {tv} |"
        )
    (OUT / "stages.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    methods = list(dict.fromkeys(r["method"] for r in results))
    engines = list(dict.fromkeys(r["engine"] for r in results))
    # one colour per stage, one line style per engine, so that a stage reads alike in every panel
    colours = dict(zip(STAGES[:-1], plt.get_cmap("tab10").colors))
    styles = dict(zip(["duckdb", "spark"], ["-", "--"]))
    fig, axes = plt.subplots(2, len(methods), figsize=(4.2 * len(methods), 7.6), squeeze=False)
    for j, method in enumerate(methods):
        for engine in engines:
            mine = sorted((r for r in results if r["method"] == method and r["engine"] == engine), key=lambda r: r["rows_in"])
            if not mine:
                continue
            ns = [r["rows_in"] for r in mine]
            for stage in STAGES[:-1]:
                if any(stage in r["time"] for r in mine):
                    line = dict(linestyle=styles.get(engine, ":"), color=colours[stage], marker="o", markersize=3)
                    axes[0, j].plot(ns, [max(r["time"].get(stage, 0), 1e-3) for r in mine], **line)
                    axes[1, j].plot(ns, [r["peak"].get(stage, 0) for r in mine], **line)
            axes[0, j].plot(ns, [r["floor_s"] for r in mine], styles.get(engine, ":"), color="k", linewidth=0.8)
        axes[0, j].set(title=method, xscale="log", yscale="log", ylabel="seconds (exclusive)")
        axes[1, j].set(xscale="log", xlabel="rows n", ylabel="peak MB in the stage (Spark: without its JVM)")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, marker="o", label=stage) for stage, c in colours.items()]
    handles.append(Line2D([], [], color="k", linewidth=0.8, label="DuckDB GROUP BY of the same tables"))
    handles += [Line2D([], [], color="grey", linestyle=styles.get(e, ":"), label=f"{e} engine") for e in engines]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(OUT / "stages.png", dpi=120)


def counting_report(results: list[dict]) -> list[dict]:
    """counting.json and counting.md, with the results of earlier invocations: like stages.json,
    counting.json gathers them (10⁸ rows, or Spark, run apart), a new run of a case at the same n
    replacing the old one. Returns every n's row."""
    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "python": platform.python_version()}
    rows = {}
    if (OUT / "counting.json").exists():
        rows = {r["rows"]: r for r in json.loads((OUT / "counting.json").read_text())["results"]}
    for r in results:
        rows[r["rows"]] = rows.get(r["rows"], {}) | r
    results = [rows[n] for n in sorted(rows)]
    (OUT / "counting.json").write_text(json.dumps({"machine": machine, "results": results}, indent=1))
    lines = [
        "| n | file MB | DuckDB GROUP BY s | MB | dipsy (DuckDB engine) s | MB | time ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if "ratio" in r:
            g, d = r["duckdb-group-by"], r["dipsy-duckdb"]
            lines.append(
                f"| {r['rows']:,} | {r['file_mb']:.0f} | {g['wall_s']:.1f} | {g['peak_mb']:.0f} | {d['wall_s']:.1f} | {d['peak_mb']:.0f} | {r['ratio']:.2f} |"
            )
    spark = [r for r in results if "spark_ratio" in r]
    if spark:  # seconds from the session's start on; the start apart; memory: Python + JVM
        lines += [
            "",
            "| n | file MB | Spark groupBy s | session start s | MB | dipsy (Spark engine) s | session start s | MB | time ratio |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in spark:
            g, d = r["spark-group-by"], r["dipsy-spark"]
            lines.append(
                f"| {r['rows']:,} | {r['file_mb']:.0f} | {g['work_s']:.1f} | {g['session_s']:.1f} | "
                f"{g['python_mb']:.0f} + JVM {g['jvm_mb']:,.0f} | {d['work_s']:.1f} | {d['session_s']:.1f} | "
                f"{d['python_mb']:.0f} + JVM {d['jvm_mb']:,.0f} | {r['spark_ratio']:.2f} |"
            )
    (OUT / "counting.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", nargs="+", type=int, default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case; the median is reported")
    parser.add_argument("--parts", nargs="+", choices=["counting", "stages"], default=["counting", "stages"])
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--engines", nargs="+", choices=["duckdb", "spark"], default=["duckdb"])
    parser.add_argument(
        "--max-rows",
        nargs=2,
        action="append",
        metavar=("METHOD", "N"),
        default=[],
        help="largest n for a method's releases, e.g. dpsyn 10000000",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--child-stages", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--child-floor", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--generate", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate:
        data_file(*args.generate)
        return
    if args.child:
        CASES[args.child[0]](args.child[1])
        return
    if args.child_stages:
        case_stages(*args.child_stages)
        return
    if args.child_floor:
        case_floor(*args.child_floor)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    largest = {m: int(n) for m, n in args.max_rows}
    if "stages" in args.parts and "dpsyn" in args.methods:
        subprocess.run([sys.executable, __file__, "--generate", str(PUBLIC_ROWS), "1"], check=True)
    results = []
    # stages.json gathers runs of several invocations (e.g. 10⁸ rows, or Spark, run apart): a new
    # run of the same n, method and engine replaces the old one
    staged = json.loads((OUT / "stages.json").read_text()) if (OUT / "stages.json").exists() and "stages" in args.parts else []
    for n in args.rows:
        t = time.monotonic()
        # generated in a child: a parent grown by the draws would be counted in each forked child's peak
        subprocess.run([sys.executable, __file__, "--generate", str(n), str(args.seed)], check=True)
        path = data_file(n, args.seed)
        print(f"n = {n:,}: data {path.stat().st_size / 2**20:.0f} MB ({time.monotonic() - t:.0f} s)", flush=True)
        if "stages" in args.parts:
            for method in args.methods:
                if n > largest.get(method, n):
                    continue
                for engine in args.engines:
                    got = run_stages(method, path, engine) | {"rows_in": n, "method": method, "engine": engine}
                    key = (n, method, engine)
                    staged = [r for r in staged if (r["rows_in"], r["method"], r["engine"]) != key] + [got]
                    print(
                        f"  {method} ({engine}): {got['wall_s']:.1f} s, {got['peak_mb']:.0f} MB; "
                        + ", ".join(f"{k} {v:.1f} s" for k, v in got["time"].items()),
                        flush=True,
                    )
            (OUT / "stages.json").write_text(json.dumps(staged, indent=1))
        if "counting" not in args.parts:
            continue
        row = {"rows": n, "file_mb": path.stat().st_size / 2**20}
        # the cases alternate, and each time is the median of --repeats runs: on a shared 2-core
        # machine one run of the floor varied from 8 to 15 s at 10⁷ rows
        cases = [case for engine in args.engines for case in ENGINE_CASES[engine]]
        runs: dict[str, list[dict]] = {case: [] for case in cases}
        for _ in range(args.repeats):
            for case in cases:
                runs[case].append(run_child(case, path))
        for case, got in runs.items():
            keys = [k for k in ("wall_s", "cpu_s", "peak_mb", "session_s", "work_s", "python_mb", "jvm_mb") if k in got[0]]
            row[case] = {key: float(np.median([g[key] for g in got])) for key in keys}
            row[case]["walls"] = [g["wall_s"] for g in got]
            print(f"  {case}: {row[case]['wall_s']:.1f} s (median of {len(got)}), {row[case]['peak_mb']:.0f} MB", flush=True)
        if "duckdb" in args.engines:
            row["ratio"] = row["dipsy-duckdb"]["wall_s"] / row["duckdb-group-by"]["wall_s"]
        if "spark" in args.engines:  # the counting itself: both JVMs' starts left out
            row["spark_ratio"] = row["dipsy-spark"]["work_s"] / row["spark-group-by"]["work_s"]
        results.append(row)
    if staged:
        stages_report(staged)
    if not results:
        return
    results = counting_report(results)
    # The stated bound: Python and dipsy's imports (about 190 MB) plus DuckDB's memory limit
    # (256 MB) and slack, whatever n is.
    over = [r for r in results if r["rows"] >= 10_000_000 and r.get("dipsy-duckdb", {}).get("peak_mb", 0) > COUNTING_BOUND_MB]
    for r in over:
        print(f"FAIL: counting {r['rows']:,} rows peaked at {r['dipsy-duckdb']['peak_mb']:.0f} MB > {COUNTING_BOUND_MB} MB")
    if over:
        sys.exit(1)


if __name__ == "__main__":
    main()
