"""Hostile sizes and refusals that must exit 2: ceilings on every option that sizes work, domains
and data files that dipsy cannot hold, and bad input once reported as a bug (design rule 5).

Every command-line case asserts what ``test_hostile_input`` does: exit code 2, standard error one
line ``error: <problem>; <fix>``, no traceback, nothing new, changed or removed where the command
could write. Ceilings are checked before any work, which keeps the cases fast; a case that would
hang or exhaust memory if its ceiling regressed runs in one subprocess under an address-space
limit and a timeout (:func:`test_sizes_are_refused_before_any_work`), so that a regression fails
here instead of taking the machine.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
import test_hostile_input
from conftest import CE_DATA, CE_DOMAIN, address_limited
from test_hostile_input import assert_refused, make_release, run, snapshot

import dipsy
from dipsy.domain import MAX_CODES, Domain
from dipsy.domain.limits import MAX_COLUMNS, MAX_DOMAIN_BYTES
from dipsy.engine import spark_engine
from dipsy.engine.fingerprint import fingerprint
from dipsy.errors import DataError, DipsyError, DomainError
from dipsy.evaluation import evaluate
from dipsy.methods import REGISTRY
from dipsy.methods.base import MAX_PRIOR, MAX_ROWS, real, whole
from dipsy.methods.rdt.calibration import EPSILON_RANGE

sandbox = test_hostile_input.sandbox  # the same fixture, over this module's inputs

#: CE's response and predictor for the pseudo-posterior, whose options are parsed before anything.
POSTERIOR = [
    "--method",
    "pseudo-posterior",
    "--epsilon",
    "100",
    "--columns",
    "UrbanRural,Expenditure",
    "--option",
    "response=Expenditure",
    "--option",
    "predictors=UrbanRural",
]


# -- inputs, made once --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> SimpleNamespace:
    """Hostile files beside the bundled CE data (read-only for the cases)."""
    d = tmp_path_factory.mktemp("sizes")
    p = SimpleNamespace(dir=d, ce=CE_DATA, dom=CE_DOMAIN)

    def write(name: str, content: str) -> Path:
        path = d / name
        path.write_text(content, encoding="utf-8")
        return path

    race = "columns:\n  Race: {kind: categorical, categories: %s}\n"
    p.dates = write("dates.yaml", race % "[2020-01-01, 2]")
    p.binary = write("binary.yaml", race % "[!!binary aGVsbG8=, 2]")
    p.twice_column = write("twice_column.yaml", race % "[1, 2]" + "  Race: {kind: categorical, categories: [1, 2, 3, 4, 5, 6]}\n")
    p.twice_field = write(
        "twice_field.yaml", "columns:\n  Race: {kind: ordinal, categories: [1, 2, 3, 4, 5, 6], kind: categorical}\n"
    )
    p.twice_json = write(
        "twice.json",
        '{"columns": {"Race": {"kind": "categorical", "categories": [1, 2]}, '
        '"Race": {"kind": "categorical", "categories": [1, 2, 3, 4, 5, 6]}}}',
    )
    p.wide_domain = write("wide.json", json.dumps({f"c{i}": 2 for i in range(MAX_COLUMNS + 1)}))
    p.wide_csv = write("wide.csv", ",".join(f"c{i}" for i in range(20_000)) + "\n" + ",".join("1" for _ in range(20_000)) + "\n")
    p.dup_csv = write("dup.csv", "Race,Income,Race\n1,2,3\n")
    p.syntax = write("syntax.py", "def broken(:\n")
    p.raises = write("raises.py", "import math\n\nraise RuntimeError('no model here')\n")
    frame = pd.read_csv(CE_DATA)
    frame["Income"] = frame["Income"].astype(float)
    frame.loc[[2, 5], "Income"] = float("inf")
    p.inf = d / "inf.csv"
    frame.to_csv(p.inf, index=False)
    p.release = make_release(d / "release", pd.read_csv(CE_DATA)[["Race", "Income"]])
    p.foreign = d / "foreign.sqlite"
    with sqlite3.connect(p.foreign) as db:
        db.execute("CREATE TABLE spends (who TEXT, amount REAL)")
        db.execute("INSERT INTO spends VALUES ('someone', 1.0)")
    db.close()
    p.fifo = d / "fifo.yaml"
    os.mkfifo(p.fifo)
    p.huge = d / "huge.yaml"
    with open(p.huge, "wb") as f:
        f.truncate(MAX_DOMAIN_BYTES + 1)  # sparse: no disk, and no write of 64 MB
    return p


def synth(p, s, *extra, data=None, domain=None):
    return ["synth", data or p.ce, "--domain", domain or p.dom, "--out", s.out, "--ledger", s.ledger, *extra]


def check(p, s, *extra, data=None, domain=None):
    return ["domain", "check", data or p.ce, "--domain", domain or p.dom, *extra]


# -- refusals that once exited 1 (or 0): fast whatever happens -----------------------------------

# (id, argv builder, a part of the message)
CASES = [
    # a user's model file is the user's input
    (
        "model file that does not compile",
        lambda p, s: synth(p, s, *POSTERIOR, "--option", f"model={p.syntax}:M"),
        "does not compile",
    ),
    (
        "model file that raises",
        lambda p, s: synth(p, s, *POSTERIOR, "--option", f"model={p.raises}:M"),
        "raised RuntimeError: no model here as it ran (line 3)",
    ),
    # values past a ceiling that overflow, or parse only to fail later
    ("dirichlet alpha=1e308", lambda p, s: synth(p, s, "--epsilon", "1", "--option", "alpha=1e308"), "more than the 1e+18"),
    (
        "beta-binomial alpha=inf",
        lambda p, s: synth(p, s, "--epsilon", "1", "--method", "beta-binomial", "--option", "alpha=inf"),
        "more than the 1e+18",
    ),
    (
        "dp-prior prior=1e300",
        lambda p, s: synth(p, s, "--epsilon", "1", "--method", "dp-prior", "--option", "prior=1e300"),
        "more than the 1e+18",
    ),
    (
        "gamma-poisson strength=1e300",
        lambda p, s: synth(p, s, "--epsilon", "1", "--method", "gamma-poisson", "--option", "strength=1e300"),
        "more than the 1e+18",
    ),
    (
        "modips prior=1e400",
        lambda p, s: synth(p, s, "--epsilon", "1", "--method", "modips", "--option", "prior=1e400"),
        "more than the 1e+18",
    ),
    ("pseudo-posterior c=1e300", lambda p, s: synth(p, s, *POSTERIOR, "--option", "c=1e300"), "more than the 1e+06"),
    ("pseudo-posterior target=1e300", lambda p, s: synth(p, s, *POSTERIOR, "--option", "target=1e300"), "more than the 10000"),
    (
        "pseudo-posterior range=0.5,1e300",
        lambda p, s: synth(p, s, *POSTERIOR, "--option", "range=0.5,1e300"),
        "more than the 1000",
    ),
    (
        "mst theta=10^9",
        lambda p, s: synth(p, s, "--rho", "1", "--method", "mst", "--option", "theta=1000000000"),
        "more than the 1,000,000",
    ),
    (
        "plan --rows 10^30",
        lambda p, s: ["plan", p.ce, "--domain", p.dom, "--method", "privsyn", "--rho", "1", "--rows", "1" + "0" * 30],
        "is not in the range 1<=x<=1000000000",
    ),
    # domains dipsy cannot hold
    (
        "a date as a category",
        lambda p, s: check(p, s, domain=p.dates),
        "'Race': the category 2020-01-01 (line 2) is read by YAML as a date",
    ),
    ("!!binary category", lambda p, s: check(p, s, domain=p.binary), "is tagged !!binary"),
    (
        "a column listed twice",
        lambda p, s: check(p, s, domain=p.twice_column),
        "gives the key 'Race' twice in one mapping (lines 2 and 3)",
    ),
    ("a field given twice", lambda p, s: check(p, s, domain=p.twice_field), "gives the key 'kind' twice"),
    ("a JSON key twice", lambda p, s: check(p, s, domain=p.twice_json), "gives the key 'Race' twice in one object"),
    ("1,001 columns", lambda p, s: synth(p, s, "--epsilon", "1", domain=p.wide_domain), f"more than the {MAX_COLUMNS:,}"),
    # data files
    (
        "init: a column named twice",
        lambda p, s: ["domain", "init", p.dup_csv, "--out", s.work / "domain.yaml"],
        "names 'Race' more than once",
    ),
    (
        "evaluate: inf in the original",
        lambda p, s: ["evaluate", p.inf, p.release, "--json", s.work / "m.json"],
        "column 'Income' holds infinite values in 2 row(s) (data rows 3, 6",
    ),
    # a ledger that is not dipsy's
    (
        "budget show: a foreign SQLite file",
        lambda p, s: ["budget", "show", "--ledger", p.foreign],
        "is not a dipsy budget ledger",
    ),
]


@pytest.mark.parametrize("name, argv, message", [pytest.param(*c, id=c[0]) for c in CASES])
def test_refused_with_exit_code_2(capfd, inputs, sandbox, name, argv, message):
    code, _, err = run(capfd, argv(inputs, sandbox))
    assert_refused(code, err, sandbox, message)


# -- ceilings, checked before any work: in a subprocess, under limits ------------------------------

#: (id, argv builder, a part of the message). Each would run for hours or allocate gigabytes if its
#: ceiling were gone.
SIZES = [
    (
        "exponential-ecdf grid=10^9",
        lambda p, w: _synth(p, w, "--method", "exponential-ecdf", "--columns", "Income", "--option", "grid=1000000000"),
        "grid=1,000,000,000 is more than the 4,472",
    ),
    (
        "privsyn rows=10^12",
        lambda p, w: _synth(p, w, "--method", "privsyn", "--option", "rows=1000000000000"),
        f"is more than the {MAX_ROWS:,}",
    ),
    (
        "dpsyn pool=10^12",
        lambda p, w: _synth(p, w, "--method", "dpsyn", "--delta", "1e-9", "--option", "pool=1000000000000"),
        "pool=1,000,000,000,000 is more than the 1,000,000",
    ),
    (
        "pseudo-posterior draws=10^9",
        lambda p, w: _synth(p, w, *POSTERIOR, "--option", "draws=1000000000"),
        "more than the 10,000",
    ),
    ("pseudo-posterior chains=10^6", lambda p, w: _synth(p, w, *POSTERIOR, "--option", "chains=1000000"), "more than the 16"),
    (
        "aim iterations=10^9",
        lambda p, w: _synth(p, w, "--method", "aim", "--option", "iterations=1000000000"),
        "more than the 100,000",
    ),
    ("aim rounds=10^9", lambda p, w: _synth(p, w, "--method", "aim", "--option", "rounds=1000000000"), "more than the 10,000"),
    (
        "aim max_size_mb=1e300",
        lambda p, w: _synth(p, w, "--method", "aim", "--option", "max_size_mb=1e300"),
        "more than the 10000",
    ),
    (
        "privsyn iterations=10^9",
        lambda p, w: _synth(p, w, "--method", "privsyn", "--option", "iterations=1000000000"),
        "more than the 1,000",
    ),
    (
        "privsyn gamma=10^12",
        lambda p, w: _synth(p, w, "--method", "privsyn", "--option", "gamma=1000000000000"),
        "more than the 1,000,000",
    ),
    (
        "rdt trees=10^6",
        lambda p, w: _synth(p, w, "--method", "rdt", "--option", "structure=random", "--option", "trees=1000000"),
        "more than the 100",
    ),
    (
        "rdt depth=10^6",
        lambda p, w: _synth(p, w, "--method", "rdt", "--option", "structure=random", "--option", "depth=1000000"),
        "more than the 20",
    ),
    (
        "rdt weights=Race:1e300",
        lambda p, w: _synth(p, w, "--method", "rdt", "--option", "weights=Race:1e300"),
        "more than the 1e+06",
    ),
    (
        "smoothed-histogram bins=10^10",
        lambda p, w: _synth(p, w, "--method", "smoothed-histogram", "--option", "bins=10000000000"),
        "more than the 1,000,000",
    ),
    (
        "rdt-leaf-size epsilon 1e-300",
        lambda p, w: ["rdt-leaf-size", "--p0", "0.25", "--epsilon", "1e-300", "--width", "0.05"],
        f"epsilon must lie between {EPSILON_RANGE[0]:g} and {EPSILON_RANGE[1]:g}",
    ),
    (
        "rdt-leaf-size grid of 10^10",
        lambda p, w: ["rdt-leaf-size", "--p0", "0.25", "--epsilon", "0.4", "--width", "0.05", "--grid", "100,10000000000"],
        "a leaf of 10,000,000,000 records",
    ),
    ("--domain /dev/zero", lambda p, w: _synth(p, w, domain="/dev/zero"), "is not a regular file"),
    ("--domain a pipe", lambda p, w: _synth(p, w, domain=p.fifo), "is not a regular file"),
    ("--domain larger than 64 MB", lambda p, w: _synth(p, w, domain=p.huge), "larger than the 64 MB"),
    ("a 20,000-column CSV", lambda p, w: _synth(p, w, data=p.wide_csv), f"names 20,000 columns, more than the {MAX_COLUMNS:,}"),
    ("check: a 20,000-column CSV", lambda p, w: ["domain", "check", p.wide_csv, "--domain", p.dom], "names 20,000 columns"),
    (
        "init: a 20,000-column CSV",
        lambda p, w: ["domain", "init", p.wide_csv, "--out", w / "domain.yaml"],
        "names 20,000 columns",
    ),
]


def _synth(p, work: Path, *extra, data=None, domain=None) -> list:
    zcdp = any(m in extra for m in ("aim", "privsyn", "mst"))
    budget = [] if "--epsilon" in extra else ["--rho", "1"] if zcdp else ["--epsilon", "1"]
    return [
        "synth",
        data or p.ce,
        "--domain",
        domain or p.dom,
        *budget,
        *extra,
        "--out",
        work / "rel",
        "--ledger",
        work / "l.sqlite",
    ]


#: Runs each case with dipsy.cli.main in one interpreter (one start-up for all), its standard error
#: caught at the file descriptor (what a JVM or C library writes too); says which case starts, so
#: a timeout names the case that hung.
DRIVER = textwrap.dedent("""
    import json, os, sys, tempfile
    from dipsy.cli import main
    for name, argv, err_path in json.load(sys.stdin):
        print("start", name, flush=True)
        saved = os.dup(2)
        with open(err_path, "w") as err:
            os.dup2(err.fileno(), 2)
            try:
                code = main(argv)
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
        print("done", json.dumps([name, code]), flush=True)
""")


def test_sizes_are_refused_before_any_work(inputs, tmp_path):
    limit = 3 << 30  # 3 GiB of address space: Python, pandas and DuckDB, not the gigabytes a regression would ask for

    temp, logs = tmp_path / "temp", tmp_path / "logs"
    temp.mkdir()
    logs.mkdir()
    cases = []
    for name, argv, _ in SIZES:
        work = tmp_path / "work" / name.replace("/", "_").replace(" ", "_")
        work.mkdir(parents=True)
        cases.append([name, [str(a) for a in argv(inputs, work)], str(logs / f"{len(cases)}.err")])
    before = snapshot(inputs.dir)
    env = {
        **os.environ,
        "TMPDIR": str(temp),
        "DIPSY_LEDGER": str(tmp_path / "default.sqlite"),
        "DIPSY_CONFIG_DIR": str(tmp_path / "config"),
    }
    try:
        done = subprocess.run(
            address_limited(limit, [sys.executable, "-c", DRIVER]),
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        started = [line for line in (e.stdout or b"").decode().splitlines() if line.startswith("start")]
        pytest.fail(f"timed out: {started[-1] if started else 'before the first case'}")
    assert done.returncode == 0, done.stderr
    codes = dict(json.loads(line.removeprefix("done ")) for line in done.stdout.splitlines() if line.startswith("done "))
    for (name, _, message), (_, _, err_path) in zip(SIZES, cases):
        err = Path(err_path).read_text()
        assert "Traceback" not in err, (name, err)
        assert codes.get(name) == 2, (name, err)
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "; " in lines[0], (name, err)
        assert message in lines[0], (name, err)
    left = [str(p) for p in (tmp_path / "work").rglob("*") if p.is_file()] + [str(p) for p in temp.iterdir()]
    assert left == [], f"refused commands left {left}"
    assert not (tmp_path / "default.sqlite").exists()
    assert snapshot(inputs.dir) == before


# -- every option that sizes work has a ceiling ----------------------------------------------------

#: Values past any sensible ceiling, as the command line gives them: whole, real, infinite, and in
#: the forms of pair and list options.
HUGE = ["1" + "0" * 30, "1e300", "inf", "Race:1e300", "0.5,1e300", "1e300,1e300"]


def _holds_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, Mapping):
        return any(_holds_number(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(_holds_number(v) for v in value)
    return False


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_every_numeric_option_has_a_ceiling(method):
    """No option of a registered method turns a huge value into a number: it refuses it when the
    options are parsed (before any work), or it is not a number (a name, a path, a choice)."""
    for option in REGISTRY[method].options:
        for value in HUGE:
            try:
                parsed = option.parse(value)
            except DipsyError:
                continue
            assert not _holds_number(parsed), (
                f"{method} option {option.name}={value} is accepted as {parsed!r}: give it a ceiling"
            )


@pytest.mark.parametrize(
    "parse, at, past, message",
    [
        (whole("k", 1, 100), "100", "101", "k=101 is more than the 100 it may be; give k= at most 100"),
        (whole("k", 0, MAX_ROWS), str(MAX_ROWS), str(MAX_ROWS + 1), f"k={MAX_ROWS + 1:,} is more than the {MAX_ROWS:,}"),
        (real("a", 0.0, MAX_PRIOR, open_low=True), "1e18", "1.000001e18", "a=1e+18 is more than the 1e+18 it may be"),
        (real("a", 0.0, MAX_PRIOR, open_low=True), "1e18", "1e400", "a=inf is more than the 1e+18"),
    ],
)
def test_a_ceiling_is_accepted_and_one_past_it_refused(parse, at, past, message):
    assert parse(at) == float(at)
    with pytest.raises(DipsyError, match=message.replace("+", r"\+")):
        parse(past)


def test_below_the_least_value_the_message_is_unchanged():
    with pytest.raises(DipsyError, match="option theta must be a whole number >= 1"):
        whole("theta", 1, 10)("0")


# -- the API -----------------------------------------------------------------------------------------


CE_FRAME = pd.read_csv(CE_DATA)


def test_a_mapping_is_a_domain():
    spec = {"columns": {"Race": {"kind": "categorical", "categories": [1, 2, 3, 4, 5, 6]}}}
    release = dipsy.synthesize(CE_FRAME[["Race"]], spec, epsilon=1.0, seed=1, accept_noise=True)
    assert release.domain.names == ("Race",)
    assert dipsy.synthesize(CE_FRAME[["Race"]], {"Race": 7}, epsilon=1.0, seed=1, on_invalid="drop", accept_noise=True).tables


@pytest.mark.parametrize("domain", [3, ["Race"], None])
def test_what_is_no_domain_is_refused(domain):
    with pytest.raises(DomainError, match="a domain is a Domain, a mapping or a domain file's path"):
        dipsy.synthesize(CE_FRAME[["Race"]], domain, epsilon=1.0)


@pytest.mark.parametrize("odd", [[1], {"a": 1}, {1, 2}])
def test_values_that_are_no_scalars_are_refused_naming_the_column(odd):
    frame = pd.DataFrame({"Race": pd.Series([1, 2, odd, 3], dtype=object)})
    with pytest.raises(DataError, match=r"column 'Race': 1 row with values of the wrong type"):
        dipsy.synthesize(frame, Domain.load(CE_DOMAIN).project(["Race"]), epsilon=1.0, accept_noise=True)


@pytest.mark.parametrize("rows", [0, -5, 1.5, MAX_ROWS + 1, True])
def test_a_declared_row_count_out_of_range_is_refused(rows):
    with pytest.raises(DipsyError, match="the declared row count must be a whole number"):
        dipsy.synthesize(CE_FRAME[["Race"]], Domain.load(CE_DOMAIN).project(["Race"]), epsilon=1.0, rows=rows, accept_noise=True)


def test_from_sizes_refuses_a_column_past_max_codes():
    assert Domain.from_sizes({"x": MAX_CODES}).shape() == (MAX_CODES,)
    with pytest.raises(DomainError, match="declares 1,000,000,000 codes, more than the 1,000,000"):
        Domain.from_sizes({"x": 10**9})


def test_evaluate_refuses_infinite_values_naming_the_column_and_rows(inputs):
    frame = CE_FRAME[["Race", "Income"]].astype({"Income": float})
    frame.loc[[0, 7], "Income"] = [float("-inf"), float("inf")]
    with pytest.raises(DataError, match=r"column 'Income' holds infinite values in 2 row\(s\) \(data rows 1, 8"):
        evaluate(frame, inputs.release)


# -- Spark: a folder's fingerprint, an unreachable master --------------------------------------------


def _parquet_folder(folder: Path) -> Path:
    (folder / "year=2020").mkdir(parents=True)
    (folder / "year=2021").mkdir()
    CE_FRAME.iloc[:500].to_parquet(folder / "year=2020" / "part-0.parquet", index=False)
    CE_FRAME.iloc[500:].to_parquet(folder / "year=2021" / "part-0.parquet", index=False)
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / "year=2020" / ".part-0.parquet.crc").write_bytes(b"crc")
    return folder


def test_a_folder_of_parquet_files_has_a_fingerprint_of_its_data_files(tmp_path):
    folder = _parquet_folder(tmp_path / "a")
    digest = fingerprint(folder)
    assert fingerprint(_parquet_folder(tmp_path / "b")) == digest  # the same files, elsewhere
    (folder / "_SUCCESS").write_bytes(b"written later")  # bookkeeping is not data
    (folder / "year=2021" / "_metadata").write_bytes(b"summary")
    assert fingerprint(folder) == digest
    moved = _parquet_folder(tmp_path / "c")
    (moved / "year=2021" / "part-0.parquet").rename(moved / "year=2021" / "part-1.parquet")
    changed = _parquet_folder(tmp_path / "d")
    CE_FRAME.iloc[500:].head(10).to_parquet(changed / "year=2021" / "part-0.parquet", index=False)
    assert len({digest, fingerprint(moved), fingerprint(changed)}) == 3
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="holds no data files"):
        fingerprint(tmp_path / "empty")


def test_a_file_and_a_frame_keep_their_fingerprints():
    import hashlib

    assert fingerprint(CE_DATA) == hashlib.sha256(CE_DATA.read_bytes()).hexdigest()
    legacy = hashlib.sha256("\x1f".join(CE_FRAME.columns).encode())
    legacy.update(pd.util.hash_pandas_object(CE_FRAME, index=False).to_numpy().tobytes())
    assert fingerprint(CE_FRAME) == legacy.hexdigest()
    odd = pd.DataFrame({"x": pd.Series([1, "a", [1], {"b": 2}], dtype=object)})  # pandas cannot hash these
    assert fingerprint(odd) == fingerprint(odd.copy()) != fingerprint(odd.iloc[:3])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_master_is_named_before_spark_starts(monkeypatch):
    monkeypatch.setattr(spark_engine, "require_spark", lambda: None)  # no JVM is needed to refuse it
    monkeypatch.setattr(spark_engine, "_SESSION", {})  # as in a new process, whatever ran on this worker before
    master = f"spark://127.0.0.1:{_closed_port()}"
    with pytest.raises(
        DataError, match=r"the Spark master 'spark://127\.0\.0\.1:\d+' is unreachable .*refused.*; start the master"
    ):
        spark_engine.spark_session(master)
    assert "spark" not in spark_engine._SESSION
    with pytest.raises(DataError, match="unreachable .*; start the master"):
        spark_engine.check_master(f"spark://127.0.0.1:{_closed_port()},127.0.0.1:{_closed_port()}")
    spark_engine.check_master("local[2]")  # local and cluster managers are Spark's to judge
    spark_engine.check_master("yarn")
