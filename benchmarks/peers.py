"""dipsy's marginal-based synthesizers beside the peer tools a user would otherwise pick, on Adult.

Tools (``--tools``), all at the same (ε, δ) on the same data, n synthetic rows for n input rows:

- ``independent``: the baseline — each one-way marginal measured with dipsy's discrete Gaussian at
  ρ/d, columns drawn independently;
- ``smartnoise-mst``, ``smartnoise-aim``: OpenDP SmartNoise Synth 1.0.8 (``snsynth``);
- ``opendp-mst``, ``opendp-aim``: OpenDP 0.16.0's own ``opendp.extras.mbi``;
- ``dipsy-privsyn``, ``dipsy-dpsyn``: ``dipsy.synthesize`` with method ``privsyn`` / ``dpsyn``
  (DPSyn also reads the public records of ``--public``);
- ``dipsy-aim``: ``dipsy.synthesize`` with method ``aim`` (its defaults: the 3-way workload, 80 MB);
- ``mbi-aim``: the AIM authors' own ``mechanisms/aim.py`` (private-pgm, the repository of mbi) on
  the 3-way workload, from a checkout named by ``--private-pgm`` (see ``peers/tool_mbi.py``);
- ``dipsy-mst``: ``dipsy.synthesize`` with method ``mst`` (MST on dipsy's exact samplers, its own
  tree estimator and i.i.d. records along the tree);
- ``dpmm-privbayes``, ``dpmm-mst``, ``dpmm-aim``: dpmm 0.1.9's PrivBayes+PGM, MST and AIM pipelines,
  given the public domain with their preprocessing off (see ``peers/tool_dpmm.py``);
- ``synthcity-aim``, ``synthcity-privbayes``, ``synthcity-dpgan``, ``synthcity-pategan``: synthcity
  0.2.12's plugins that take a budget, at their defaults; synthcity takes no public domain and reads
  each column's values from the data (see ``peers/tool_synthcity.py``);
- ``privpgd``: PrivPGD, the authors' ``examples/privpgd.py`` (all 2-way marginals measured, particle
  gradient descent) from a checkout named by ``--privpgd`` (see ``peers/tool_privpgd.py``).

Peers are reported as shipped: default settings, their own (ε, δ) → ρ conversions and their own
samplers. SmartNoise 1.0.8 samples through mbi 1.1.0, and so does OpenDP 0.16.0 (its ``mbi`` extra
pins mbi 1.1.0; it cannot import mbi 2.0). The one change: OpenDP's MST cannot release on Adult
without a back-off of a relative 1e-12 on its selection budget (see ``peers/tool_opendp.py``); and
OpenDP's environment gets pandas, which its ``mbi`` extra leaves out but needs for records. Each
peer lives in its own virtual environment under ``build/bench/venvs/<name>``, created and filled
from PyPI by this script the first time (a stamp file marks it done); none is a project dependency.

How it is measured: every run is a fresh child process (``peers/child.py``) pinned to one core
(``taskset``) with BLAS, OpenMP and XLA held to one thread. The parent takes the wall time from
start to exit (monotonic clock; interpreter start, imports, reading the data and writing the CSV
included, the same for every tool; the child also reports the seconds inside the synthesizer, and
the extra draws of the variant rows below are timed apart and left out), and from ``wait4`` the
child's peak resident memory and CPU seconds (which, unlike wall time, other work sharing the
machine does not inflate; results.json keeps the load at launch too). A child past
``--timeout-minutes`` is killed with its process group. The parent then scores each CSV the same
way for every tool: mean total variation distance, TVD = ½ Σ |p − q| over proportions, over all
1-way (14) and 2-way (91) marginals and the 256 three-way marginals of ``adult_3way.json``, by
``np.bincount`` on combined codes. A frame with missing columns or codes outside the domain is
recorded as an error; a row a peer leaves empty counts as mass outside the domain (its share is
recorded). ``--data``/``--domain`` may also name data of values and a dipsy domain file (the ACS
excerpt: ``examples/acs/``), which the scorer codes with dipsy's codec, a value off the domain
counting as outside; only dipsy's synthesizers read such data: the baseline and the peers are given
the same rows coded (``coded/data.csv`` under ``--out``, rows with a value off the domain left out)
with a map of column sizes (``coded/sizes.json``), and their codes are scored as codes.

Variants: OpenDP's runs also draw their fitted model's records with ``method="sample"`` (i.i.d.),
scored and shown as extra rows, because mbi 1.1.0's default rounding sampler ties columns that
share a parent together and so hides how good the model is (on Adult at ε = 1, MST's 2-way TVD is
about .14 with the default and .05 with i.i.d. draws from the same model).

Writes ``build/bench/peers/results.json`` after every run (a rerun skips recorded runs unless
``--force``), then the means over seeds as ``table.md`` and ``error_vs_epsilon.png`` beside it;
each run's job, CSV and logs stay in ``build/bench/peers/runs/``.

Usage: python benchmarks/peers.py [--tools independent opendp-mst ...] [--epsilons 0.1 1 10]
       [--seeds 0 1] [--jobs 1] [--timeout-minutes 40] [--force] [--summarize-only]
       [--private-pgm DIR] [--privpgd DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "peers"
OUT = ROOT / "build" / "bench" / "peers"
VENVS = ROOT / "build" / "bench" / "venvs"
SHARED = ROOT.parent / "shared"  # the shared folder beside the work tree (data and fixed benchmark inputs)
ADULT = SHARED / "data" / "adult"
DELTA = 1e-9

#: tool -> (environment, module under peers/, method): the environment "project" is this interpreter's
TOOLS = {
    "independent": ("project", "tool_dipsy", "independent"),
    "smartnoise-mst": ("smartnoise", "tool_smartnoise", "mst"),
    "smartnoise-aim": ("smartnoise", "tool_smartnoise", "aim"),
    "opendp-mst": ("opendp", "tool_opendp", "mst"),
    "opendp-aim": ("opendp", "tool_opendp", "aim"),
    "dipsy-privsyn": ("project", "tool_dipsy", "privsyn"),
    "dipsy-privsyn-paper": ("project", "tool_dipsy", "privsyn-paper"),
    "dipsy-dpsyn": ("project", "tool_dipsy", "dpsyn"),
    "dipsy-aim": ("project", "tool_dipsy", "aim"),
    "dipsy-mst": ("project", "tool_dipsy", "mst"),
    "mbi-aim": ("private-pgm", "tool_mbi", "aim"),
    "dpmm-privbayes": ("dpmm", "tool_dpmm", "privbayes"),
    "dpmm-mst": ("dpmm", "tool_dpmm", "mst"),
    "dpmm-aim": ("dpmm", "tool_dpmm", "aim"),
    "synthcity-aim": ("synthcity", "tool_synthcity", "aim"),
    "synthcity-privbayes": ("synthcity", "tool_synthcity", "privbayes"),
    "synthcity-dpgan": ("synthcity", "tool_synthcity", "dpgan"),
    "synthcity-pategan": ("synthcity", "tool_synthcity", "pategan"),
    "privpgd": ("privpgd", "tool_privpgd", "privpgd"),
}
#: what pip installs into each peer's environment: the published package, its own pins doing the rest;
#: opendp[mbi] leaves out pandas, which mbi 1.1.0 imports to turn its model into records
ENVS = {
    "smartnoise": ["smartnoise-synth==1.0.8"],
    "opendp": ["opendp[mbi]==0.16.0", "pandas"],
    "sdnist": ["sdnist==2.4"],  # benchmarks/sdnist_check.py: SDNist's own k-marginal score
    # the authors' repository, from the checkout --private-pgm names (PRIVATE_PGM below), with the JAX
    # of its last commit (August 2025): under JAX 0.10 its Factor arithmetic fails while tracing
    # ("DynamicJaxprTracer has no attribute domain"); its mechanisms import matplotlib and pandas, and its
    # sampler needs pandas < 3 (its groupby().apply() keeps the grouping columns only before pandas 3:
    # under 3.1 the second column's groupby fails with KeyError after a whole fit)
    "private-pgm": [
        "{private_pgm}",
        "jax==0.7.0",
        "jaxlib==0.7.0",
        "chex==0.1.90",
        "optax==0.2.5",
        "matplotlib",
        "pandas<3",
    ],
    "dpmm": ["dpmm==0.1.9"],
    # synthcity pins torch < 2.3 but leaves opacus open, and pip's opacus 1.5.4 cannot be imported under
    # torch 2.2 (it registers torch.nn.RMSNorm, new in torch 2.4): 1.5.2 is the newest without it
    "synthcity": ["synthcity==0.2.12", "opacus==1.5.2"],
    # PrivPGD's repository, from the checkout --privpgd names (PRIVPGD below), with its own pins (torch
    # 2.1.2 among them); its setup.py asks for Python ==3.11.5 exactly, so pip is told to look past that,
    # which it then does for every package: contourpy (under seaborn's matplotlib) is held below 1.4,
    # the first to need Python 3.12
    "privpgd": ["--ignore-requires-python", "{privpgd}", "contourpy<1.4"],
}
#: the private-pgm checkout, set from --private-pgm (tested at its commit 4d2b3c5 of 2025-08-08)
PRIVATE_PGM: Path | None = None
#: the PrivPGD checkout, set from --privpgd (tested at its commit dd315e0 of 2025-02-11)
PRIVPGD: Path | None = None
#: one core means one thread: the libraries underneath would otherwise size their pools to the machine
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_PLATFORMS": "cpu",  # the same device for every run, even on a machine with an accelerator
}
STATUS_TAIL = 2000  # characters of a failed child's stderr kept in results.json

log = logging.getLogger("peers")


class InvalidOutput(Exception):
    """A synthetic frame that cannot be scored against the domain."""


# --- environments -------------------------------------------------------------------------------


def ensure_env(name: str) -> Path:
    """The interpreter of peer environment ``name``, created and filled on first use."""
    folder = VENVS / name
    python, stamp = folder / "bin" / "python", folder / ".peers-installed"
    if name == "private-pgm" and PRIVATE_PGM is None:
        raise RuntimeError("mbi-aim needs --private-pgm DIR: a checkout of github.com/ryan112358/private-pgm")
    if name == "privpgd" and PRIVPGD is None:
        raise RuntimeError("privpgd needs --privpgd DIR: a checkout of github.com/jaabmar/private-pgd")
    packages = [p.format(private_pgm=PRIVATE_PGM, privpgd=PRIVPGD) for p in ENVS[name]]
    wanted = json.dumps(packages)
    if stamp.exists() and stamp.read_text() == wanted and python.exists():
        return python
    log.info("installing %s into %s (once)", " ".join(packages), folder)
    VENVS.mkdir(parents=True, exist_ok=True)
    install_log = VENVS / f"{name}-install.log"
    steps = [[str(python), "-m", "pip", "install", *packages]]
    if not python.exists():
        steps.insert(0, [sys.executable, "-m", "venv", str(folder)])
    with install_log.open("w") as out:
        for step in steps:
            if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT).returncode:
                raise RuntimeError(f"{' '.join(step)} failed:\n{tail(install_log)}")
    freeze = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True)
    (folder / "freeze.txt").write_text(freeze.stdout)
    stamp.write_text(wanted)
    return python


def interpreters(tools: list[str]) -> dict[str, Path | str]:
    """Each needed environment's interpreter, or the install error that its runs will record."""
    found: dict[str, Path | str] = {"project": Path(sys.executable)}
    for env in sorted({TOOLS[t][0] for t in tools} - {"project"}):
        try:
            found[env] = ensure_env(env)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as err:
            found[env] = f"install failed: {err}"[-STATUS_TAIL:]
    return found


# --- scoring ------------------------------------------------------------------------------------


def _dipsy_domain(path: Path):
    """The dipsy domain in ``path``, or None when the file is a plain map of column sizes."""
    if path.suffix == ".json":
        sizes = json.loads(path.read_text())
        if isinstance(sizes, dict) and all(isinstance(v, int) for v in sizes.values()):
            return None
    from dipsy.domain import Domain

    return Domain.load(path)


class Scorer:
    """The real data's marginals, and the mean TVD of a synthetic frame's at 1, 2 and 3 ways."""

    def __init__(self, data: Path, domain: Path, three_way: Path):
        self.data, self.domain_path = data, domain
        self.domain = _dipsy_domain(domain)
        if self.domain is None:  # a map of column sizes over pre-coded data (Adult's)
            self.sizes = json.loads(domain.read_text())
            self.columns = list(self.sizes)
            real = pd.read_csv(data, usecols=self.columns)[self.columns].to_numpy(np.int64)
        else:  # a dipsy domain (categories, bins, missing states): values coded by dipsy's codec
            self.columns = list(self.domain.names)
            self.sizes = dict(zip(self.columns, self.domain.shape()))
            real = self.encoded(pd.read_csv(data))
        self.dims = np.array([self.sizes[c] for c in self.columns])
        index = {c: i for i, c in enumerate(self.columns)}
        triples = json.loads(three_way.read_text())["marginals"] if three_way.exists() else self.triples(three_way)
        self.marginals = {
            1: [(i,) for i in range(len(self.columns))],
            2: list(itertools.combinations(range(len(self.columns)), 2)),
            3: [tuple(index[c] for c in triple) for triple in triples],
        }
        self.real = {m: self.proportions(real, m)[0] for ways in self.marginals.values() for m in ways}
        self.rows = len(real)
        self.real_codes = real

    def triples(self, path: Path, count: int = 256) -> list[list[str]]:
        """256 column triples by adult_3way.json's recipe (seeded choice from the sorted list), saved."""
        every = list(itertools.combinations(self.columns, 3))
        chosen = sorted(np.random.default_rng(0).choice(len(every), size=min(count, len(every)), replace=False))
        triples = [list(every[i]) for i in chosen]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"columns": self.columns, "marginals": triples}, indent=1) + "\n")
        return triples

    def proportions(self, codes: np.ndarray, marginal: tuple[int, ...]) -> tuple[np.ndarray, float]:
        """Cell proportions of ``marginal`` over all rows, and the share of rows outside the domain."""
        part = codes[:, marginal]
        inside = (part >= 0).all(axis=1)
        cells = np.ravel_multi_index(part[inside].T, self.dims[list(marginal)])
        counts = np.bincount(cells, minlength=int(np.prod(self.dims[list(marginal)])))
        return counts / len(codes), 1.0 - inside.mean()

    def score(self, synthetic: np.ndarray) -> dict:
        out = {}
        for ways, marginals in self.marginals.items():
            tvds = []
            for m in marginals:
                q, outside = self.proportions(synthetic, m)
                tvds.append(0.5 * (np.abs(self.real[m] - q).sum() + outside))  # real mass outside is 0
            out[f"tvd_{ways}"] = float(np.mean(tvds))
        out["outside_share"] = float((synthetic < 0).any(axis=1).mean())
        out["rows"] = len(synthetic)
        return out

    def encoded(self, frame: pd.DataFrame) -> np.ndarray:
        """Values coded by dipsy's codec over the dipsy domain; a value off the domain is -1 (outside)."""
        from dipsy.domain import encode_frame

        encoded, _ = encode_frame(frame, self.domain)
        if not encoded:
            raise InvalidOutput(f"columns missing from the data: {[c for c in self.columns if c not in frame.columns]}")
        return np.stack([encoded[c].codes for c in self.columns], axis=1).astype(np.int64)

    def coded_inputs(self, folder: Path) -> tuple[Path, Path]:
        """The real data as codes (rows with a value off the domain left out) and a map of column
        sizes, written under ``folder``: what a tool that does not read a dipsy domain is given."""
        data, sizes = folder / "data.csv", folder / "sizes.json"
        inputs = {self.data.resolve(), self.domain_path.resolve()}
        if {data.resolve(), sizes.resolve()} & inputs:
            raise SystemExit(f"--out would write the coded copy over an input ({data}, {sizes}): choose another --out")
        folder.mkdir(parents=True, exist_ok=True)
        inside = (self.real_codes >= 0).all(axis=1)
        if not inside.all():
            log.info("coded data for the peers: %d rows with a value off the domain left out", int((~inside).sum()))
        pd.DataFrame(self.real_codes[inside], columns=self.columns).to_csv(data, index=False)
        sizes.write_text(json.dumps({c: int(n) for c, n in self.sizes.items()}, indent=1) + "\n")
        return data, sizes

    def codes(self, path: Path, coded: bool = False) -> np.ndarray:
        """The synthetic CSV as codes, empty cells as -1; anything else off the domain is invalid.
        With a dipsy domain, a CSV of values is coded by dipsy's codec unless ``coded`` says it holds codes."""
        if self.domain is not None and not coded:
            return self.encoded(pd.read_csv(path))
        frame = pd.read_csv(path)
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise InvalidOutput(f"columns missing from the synthetic data: {missing}")
        if frame.empty:
            raise InvalidOutput("the synthetic data has no rows")
        codes = np.empty((len(frame), len(self.columns)), dtype=np.int64)
        for j, name in enumerate(self.columns):
            values = pd.to_numeric(frame[name], errors="coerce")
            bad = values.notna() & ((values % 1 != 0) | (values < 0) | (values >= self.sizes[name]))
            bad |= values.isna() & frame[name].notna()  # text where a code should be
            if bad.any():
                example = frame[name][bad].iloc[0]
                raise InvalidOutput(
                    f"column {name!r}: {int(bad.sum())} values are not codes 0..{self.sizes[name] - 1}, e.g. {example!r}"
                )
            codes[:, j] = values.fillna(-1).to_numpy(np.int64)
        return codes


# --- runs ---------------------------------------------------------------------------------------


@dataclass
class Child:
    """A run in progress: its process, the core it holds, when it started."""

    run: dict
    folder: Path
    core: int
    proc: subprocess.Popen
    start: float
    load: float  # the machine's 1-minute load average at launch: other work shares the cores
    killed: bool = False


def run_folder(run: dict) -> Path:
    return OUT / "runs" / run["tool"] / f"eps{run['epsilon']:g}-seed{run['seed']}"


def reads_values(tool: str) -> bool:
    """Whether ``tool`` reads data of values with a dipsy domain (dipsy's synthesizers; not the baseline)."""
    _, module, method = TOOLS[tool]
    return module == "tool_dipsy" and method != "independent"


def launch(run: dict, python: Path, core: int, args: argparse.Namespace, rows: int, coded: tuple[Path, Path] | None) -> Child:
    folder = run_folder(run)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in [folder / "meta.json", *folder.glob("synthetic*.csv")]:
        stale.unlink(missing_ok=True)
    _, module, method = TOOLS[run["tool"]]
    data, domain = coded if coded and not reads_values(run["tool"]) else (args.data, args.domain)
    job = {
        **run,
        "module": module,
        "method": method,
        "data": str(data),
        "domain": str(domain),
        "public": str(args.public),
        "private_pgm": str(args.private_pgm),
        "rows": rows,
    }
    (folder / "job.json").write_text(json.dumps(job, indent=2) + "\n")
    # taskset execs the interpreter in place, so the pid (and wait4's peak memory) is the child's own
    command = ["taskset", "-c", str(core), str(python), str(HERE / "child.py"), str(folder)]
    with (folder / "stdout.log").open("w") as out, (folder / "stderr.log").open("w") as err:
        proc = subprocess.Popen(
            command, stdout=out, stderr=err, env={**os.environ, **ONE_THREAD}, start_new_session=True
        )  # its own process group, killed whole on timeout
    return Child(run, folder, core, proc, time.monotonic(), os.getloadavg()[0])


def reap(child: Child, timeout_s: float) -> tuple[float, int, float, float] | None:
    """(wall seconds, exit status, peak MB, CPU seconds) once the child has exited; kill it when over time."""
    pid, status, usage = os.wait4(child.proc.pid, os.WNOHANG)
    if pid == 0:
        if not child.killed and time.monotonic() - child.start > timeout_s:
            os.killpg(child.proc.pid, signal.SIGKILL)
            child.killed = True
        return None
    wall = time.monotonic() - child.start
    child.proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen must not wait
    return wall, child.proc.returncode, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # KiB on Linux


def record(child: Child, wall: float, code: int, peak_mb: float, cpu: float, scorer: Scorer, machine: dict) -> dict:
    """The results.json entry of a finished child: status, cost, scores and provenance."""
    meta_path = child.folder / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    extra = meta.get("variants_s", 0.0)
    entry = {
        **child.run,
        "wall_s": wall - extra,
        "peak_mb": peak_mb,
        "cpu_s": cpu - extra,
        "load_at_start": child.load,
        "synthesize_s": meta.get("synthesize_s"),
        "versions": meta.get("versions", {}),
        "notes": meta.get("notes", ""),
        "machine": machine,
    }
    if child.killed:
        return {**entry, "status": "timeout"}
    if code != 0:
        return {**entry, "status": "error", "message": tail(child.folder / "stderr.log")}
    coded = scorer.domain is not None and not reads_values(child.run["tool"])
    scores = score_file(scorer, child.folder / "synthetic.csv", coded)
    if "error" in scores:
        return {**entry, "status": "error", "message": scores["error"]}
    variants = {
        path.stem.removeprefix("synthetic-"): score_file(scorer, path, coded)
        for path in sorted(child.folder.glob("synthetic-*.csv"))
    }
    return {**entry, "status": "ok", **scores, **({"variants": variants} if variants else {})}


def score_file(scorer: Scorer, path: Path, coded: bool = False) -> dict:
    try:
        return scorer.score(scorer.codes(path, coded))
    except (InvalidOutput, OSError, ValueError) as err:
        return {"error": f"invalid synthetic data: {err}"[-STATUS_TAIL:]}


def run_all(plan: list[dict], pythons: dict, args: argparse.Namespace, scorer: Scorer, results: dict) -> None:
    """Run the plan, ``--jobs`` children at a time on distinct cores, saving after every run."""
    machine = machine_info()
    free = sorted(os.sched_getaffinity(0))[: args.jobs]
    pending, running = list(plan), []
    # the baseline and the peers read codes: with a dipsy domain they get the data coded by dipsy's codec
    coded = (
        scorer.coded_inputs(OUT / "coded")
        if scorer.domain is not None and not all(reads_values(r["tool"]) for r in plan)
        else None
    )
    try:
        while pending or running:
            while pending and free:
                run = pending.pop(0)
                python = pythons[TOOLS[run["tool"]][0]]
                if isinstance(python, str):  # its environment could not be installed
                    store(results, {**run, "status": "error", "message": python, "machine": machine})
                    continue
                running.append(launch(run, python, free.pop(0), args, scorer.rows, coded))
            for child in list(running):
                done = reap(child, args.timeout_minutes * 60)
                if done:
                    running.remove(child)
                    free.append(child.core)
                    store(results, record(child, *done, scorer, machine))
            time.sleep(0.2)
    finally:  # interrupted: children run in their own sessions, so end them here
        for child in running:
            os.killpg(child.proc.pid, signal.SIGKILL)
            os.waitpid(child.proc.pid, 0)
            child.proc.returncode = -signal.SIGKILL


def store(results: dict, entry: dict) -> None:
    key = run_key(entry)
    results["runs"] = [r for r in results["runs"] if run_key(r) != key] + [entry]
    save(results)
    ok = entry["status"] == "ok"
    scores = f"TVD 1/2/3-way {entry['tvd_1']:.4f} {entry['tvd_2']:.4f} {entry['tvd_3']:.4f}" if ok else ""
    cost = f"{entry['wall_s']:.1f} s, {entry['peak_mb']:.0f} MB" if "wall_s" in entry else ""
    log.info("%s ε=%g seed %d: %s %s %s", entry["tool"], entry["epsilon"], entry["seed"], entry["status"], cost, scores)


def run_key(run: dict) -> tuple:
    return run["tool"], float(run["epsilon"]), float(run["delta"]), int(run["seed"])


def save(results: dict) -> None:
    path = OUT / "results.json"
    temporary = path.with_suffix(".json.part")
    temporary.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    temporary.replace(path)  # a reader never sees half a file


def load() -> dict:
    path = OUT / "results.json"
    return json.loads(path.read_text()) if path.exists() else {"runs": []}


def tail(path: Path) -> str:
    return path.read_text(errors="replace")[-STATUS_TAIL:] if path.exists() else ""


def machine_info() -> dict:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory_kib = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
    )
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(memory_kib / 2**20, 1),
        "system": platform.platform(),
        "python": platform.python_version(),
        "dipsy_commit": commit.stdout.strip(),
    }


# --- main ---------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tools",
        nargs="+",
        choices=list(TOOLS),
        default=[t for t in TOOLS if t not in ("dipsy-dpsyn", "mbi-aim", "privpgd") and not t.startswith("synthcity-")],
        help="default: all but dipsy-dpsyn, which needs public records of the same encoding (--public), "
        "mbi-aim and privpgd, which need checkouts (--private-pgm, --privpgd), and synthcity's, which need a "
        "7 GB environment and read the domain from the data (docs/benchmarks/peers.md)",
    )
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--delta", type=float, default=DELTA)
    parser.add_argument("--jobs", type=int, default=1, help="children at once, each on its own core")
    parser.add_argument("--timeout-minutes", type=float, default=40.0)
    parser.add_argument("--force", action="store_true", help="rerun runs already in results.json")
    parser.add_argument("--summarize-only", action="store_true", help="only redo table and plot from results.json")
    parser.add_argument("--data", type=Path, default=ADULT / "adult.csv")
    parser.add_argument(
        "--domain",
        type=Path,
        default=ADULT / "adult-domain.json",
        help="a map of column sizes over coded data, or a dipsy domain",
    )
    parser.add_argument("--public", type=Path, default=ADULT / "pub025" / "pub.csv", help="public records for dpsyn")
    parser.add_argument(
        "--three-way",
        type=Path,
        default=SHARED / "bench" / "adult_3way.json",
        help="the 3-way marginals to score; a missing file is made by adult_3way.json's recipe",
    )
    parser.add_argument("--out", type=Path, default=OUT, help="folder of results.json, the table and the plot")
    parser.add_argument(
        "--private-pgm",
        type=Path,
        help="a checkout of github.com/ryan112358/private-pgm, for mbi-aim (the authors' AIM; not on PyPI)",
    )
    parser.add_argument(
        "--privpgd",
        type=Path,
        help="a checkout of github.com/jaabmar/private-pgd, for privpgd (the PrivPGD authors' code; not on PyPI)",
    )
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    if not 1 <= args.jobs <= cores:
        parser.error(f"--jobs must lie in 1..{cores} (one core per child)")
    return args


def main() -> None:
    global OUT, PRIVATE_PGM, PRIVPGD  # the run folders, results and summary all live under --out
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = parse_args()
    OUT = args.out
    PRIVATE_PGM = args.private_pgm.resolve() if args.private_pgm else None
    PRIVPGD = args.privpgd.resolve() if args.privpgd else None
    OUT.mkdir(parents=True, exist_ok=True)
    VENVS.mkdir(parents=True, exist_ok=True)
    results = load()
    if not args.summarize_only:
        done = {run_key(r) for r in results["runs"]}
        plan = [
            {"tool": t, "epsilon": e, "delta": args.delta, "seed": s}
            for t, e, s in itertools.product(args.tools, args.epsilons, args.seeds)
        ]
        plan = [run for run in plan if args.force or run_key(run) not in done]
        if plan:
            scorer = Scorer(args.data, args.domain, args.three_way)
            run_all(plan, interpreters([run["tool"] for run in plan]), args, scorer, results)
    sys.path.insert(0, str(HERE))  # the summary module sits beside the children it describes
    from summary import summarize

    results["summary"] = summarize(results["runs"], list(TOOLS), OUT)
    save(results)
    print(
        f"{len(results['runs'])} runs in {OUT / 'results.json'}; the means in {OUT / 'table.md'} and {OUT / 'error_vs_epsilon.png'}"
    )


if __name__ == "__main__":
    main()
