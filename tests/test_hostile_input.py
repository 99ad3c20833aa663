"""Hostile input at the command line: every case is refused the same way (design rule 5).

Each case runs ``dipsy.cli.main([...])`` and asserts: exit code 2; standard error exactly one line
``error: <problem>; <fix>``; no traceback; and nothing new, changed or removed anywhere the
command could write — the sandbox (no --out folder, no ledger, no folder made for them), the
inputs, the default ledger's folder and the temporary folder (no DuckDB spill folder, no
temporary release folder).

The memory bombs (10⁹ bins, 10¹⁰ cells) must be refused from the declared sizes before anything
is allocated, which keeps these cases fast; the bins bomb also runs in a subprocess under an
address-space limit and a timeout, so that a regression fails here instead of taking the machine.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN, address_limited
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dipsy.cli import EPSILON_RANGE, MAX_SETS, main
from dipsy.domain import CELL_LIMIT, MAX_CODES, Domain, check_cells
from dipsy.engine import NumpyEngine
from dipsy.engine.owner import MARKER
from dipsy.errors import DataError, DomainError
from dipsy.release import sweep_stale

ALIAS_BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
columns:
  Race: {kind: categorical, categories: [1, 2, 3, 4, 5, 6], description: *i}
"""


# -- inputs, made once --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> SimpleNamespace:
    """Small hostile files beside the bundled CE data (read-only for the cases)."""
    d = tmp_path_factory.mktemp("inputs")
    frame = pd.read_csv(CE_DATA)
    p = SimpleNamespace(dir=d, ce=CE_DATA, dom=CE_DOMAIN)

    def write(name: str, content: str | bytes) -> Path:
        path = d / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        return path

    bad = frame.copy()
    bad.loc[[3, 10, 11], "Race"] = 9
    p.bad = d / "bad.csv"
    bad.to_csv(p.bad, index=False)
    p.header_only = write("header_only.csv", "UrbanRural,Income,Race,Expenditure\n")
    p.dup_header = write("dup_header.csv", "Race,Race,UrbanRural\n1,2,1\n3,4,2\n")
    p.fake_parquet = write("data.parquet", "UrbanRural,Race\n1,2\n")
    p.text_data = write("data.txt", "Race\n1\n")
    lines = CE_DATA.read_bytes().split(b"\n")
    p.mixed = write("mixed.csv", b"".join(line + (b"\r\n" if k % 2 else b"\n") for k, line in enumerate(lines[:-1])))
    p.latin1 = write("latin1.yaml", "columns:\n  Race: {kind: categorical, categories: [1, 2, caf\xe9]}\n".encode("latin-1"))
    p.binary = write("binary.yaml", bytes(range(256)) * 4)
    p.alias_bomb = write("bomb.yaml", ALIAS_BOMB)
    p.yes_no = write("yes_no.yaml", "columns:\n  Race: {kind: categorical, categories: [yes, no]}\n")
    p.yes_key = write("yes_key.yaml", "columns:\n  yes: {kind: categorical, categories: [a, b]}\n")
    p.bins_bomb = write("bins_bomb.yaml", "columns:\n  Income: {kind: numeric, lower: 0, upper: 1000000, bins: 1000000000}\n")
    p.many_cats = write(
        "many_cats.json", json.dumps({"columns": {"Race": {"kind": "categorical", "categories": list(range(MAX_CODES + 1))}}})
    )
    p.no_bins = write("no_bins.yaml", "columns:\n  Income: {kind: numeric, lower: 0, upper: 1000000}\n")
    p.broken = write("broken.yaml", "columns: [Race")
    p.cells_domain = write(
        "cells.yaml", "columns:\n  a: {kind: integer, lower: 0, upper: 99999}\n  b: {kind: integer, lower: 0, upper: 99999}\n"
    )
    p.cells_data = write("cells.csv", "a,b\n1,2\n3,4\n5,6\n")
    p.a_file = write("a_file.txt", "not a folder\n")
    p.folder = d / "a_folder"
    p.folder.mkdir()
    # A release folder written by hand (independent of the methods): one set of Race.
    p.release = make_release(d / "release", frame[["Race"]])
    p.corrupt = make_release(d / "corrupt", frame[["Race"]])
    data = (p.corrupt / "synthetic_1.parquet").read_bytes()
    (p.corrupt / "synthetic_1.parquet").write_bytes(data[: len(data) // 3])
    p.garbage_json = make_release(d / "garbage_json", frame[["Race"]])
    (p.garbage_json / "release.json").write_text("{not json")
    p.not_release = d / "not_release"
    p.not_release.mkdir()
    (p.not_release / "precious.txt").write_text("do not lose me\n")
    p.release_plus = make_release(d / "release_plus", frame[["Race"]])
    (p.release_plus / "notes.txt").write_text("mine\n")
    return p


def make_release(folder: Path, table: pd.DataFrame) -> Path:
    folder.mkdir()
    table.to_parquet(folder / "synthetic_1.parquet", index=False)
    Domain.load(CE_DOMAIN).project(list(table.columns)).save(folder / "domain.yaml")
    meta = {
        "release_id": uuid.uuid4().hex,
        "release": "records",
        "method": "dirichlet-multinomial",
        "sets": 1,
        "rows": [len(table)],
        "columns": list(table.columns),
        "dipsy_version": "test",
        "privacy": {"definition": "pure-DP"},
        "combining_rule": "single",
    }
    (folder / "release.json").write_text(json.dumps(meta))
    return folder


# -- the sandbox and what a refusal must leave ----------------------------------------------------


def snapshot(*roots: Path) -> dict[str, tuple]:
    """Every path under ``roots``, with its kind, and a file's size and modification time."""
    seen = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                st_ = path.lstat()
                folder = stat.S_ISDIR(st_.st_mode)  # a folder's time changes with a probe file made and removed
                seen[str(path)] = (stat.S_IFMT(st_.st_mode), 0 if folder else st_.st_size, 0 if folder else st_.st_mtime_ns)
    return seen


@pytest.fixture
def sandbox(tmp_path, inputs, monkeypatch, private_ledger) -> SimpleNamespace:
    """Where a command may write: the sandbox, a private temporary folder, the default ledger's."""
    work = tmp_path / "work"
    temp = tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    s = SimpleNamespace(work=work, temp=temp, out=work / "rel", ledger=work / "ledger.sqlite", roots=(tmp_path, inputs.dir))
    s.before = snapshot(*s.roots)
    return s


def run(capfd, args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capfd.readouterr()
    return code, captured.out, captured.err


def assert_refused(code: int, err: str, sandbox: SimpleNamespace, message: str | None = None) -> None:
    assert "Traceback" not in err, err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith("error: ") and "; " in lines[0], err
    if message is not None:
        assert message in lines[0], err
    assert snapshot(*sandbox.roots) == sandbox.before, "the refused command left something behind"


# -- the table of cases ---------------------------------------------------------------------------


def synth(p, s, *extra, data=None, domain=None):
    return ["synth", data or p.ce, "--domain", domain or p.dom, "--out", s.out, "--ledger", s.ledger, *extra]


def check(p, s, *extra, data=None, domain=None):
    return ["domain", "check", data or p.ce, "--domain", domain or p.dom, *extra]


def evaluate(p, s, *extra, release=None):
    return ["evaluate", p.ce, release or p.release, *extra]


# (id, argv builder, a part of the message or None)
CASES = [
    # the budget, checked before any work
    ("epsilon 1e308", lambda p, s: synth(p, s, "--epsilon", "1e308"), "epsilon must lie between"),
    ("epsilon 1e-320", lambda p, s: synth(p, s, "--epsilon", "1e-320"), "epsilon must lie between"),
    ("epsilon above range", lambda p, s: synth(p, s, "--epsilon", "10001"), "epsilon must lie between"),
    ("epsilon below range", lambda p, s: synth(p, s, "--epsilon", "9e-7"), "epsilon must lie between"),
    ("epsilon 0", lambda p, s: synth(p, s, "--epsilon", "0"), "epsilon must be a finite number > 0"),
    ("epsilon -1", lambda p, s: synth(p, s, "--epsilon", "-1"), "epsilon must be a finite number > 0"),
    ("epsilon nan", lambda p, s: synth(p, s, "--epsilon", "nan"), "epsilon must be a finite number > 0"),
    ("epsilon inf", lambda p, s: synth(p, s, "--epsilon", "inf"), "epsilon must be a finite number > 0"),
    ("epsilon text", lambda p, s: synth(p, s, "--epsilon", "abc"), "epsilon must be a finite number > 0"),
    ("no budget", lambda p, s: synth(p, s), "epsilon"),
    ("delta 1", lambda p, s: synth(p, s, "--method", "privsyn", "--epsilon", "1", "--delta", "1"), "delta must lie in (0, 1)"),
    ("delta 0", lambda p, s: synth(p, s, "--method", "privsyn", "--epsilon", "1", "--delta", "0"), "delta must lie in (0, 1)"),
    ("rho above range", lambda p, s: synth(p, s, "--method", "privsyn", "--rho", "1e5"), "rho must lie between"),
    ("rho negative", lambda p, s: synth(p, s, "--method", "privsyn", "--rho", "-1"), "rho must be a finite number > 0"),
    ("budget cap text", lambda p, s: synth(p, s, "--epsilon", "1", "--budget-cap", "lots", "--dataset-id", "ce"), "budget cap"),
    (
        "budget cap below spend",
        lambda p, s: synth(p, s, "--epsilon", "1", "--budget-cap", "0.5", "--dataset-id", "ce", "--accept-noise"),
        "cap",
    ),
    # sets
    ("sets 10^9", lambda p, s: synth(p, s, "--epsilon", "1", "--sets", "1000000000"), f"at most {MAX_SETS}"),
    ("sets 0", lambda p, s: synth(p, s, "--epsilon", "1", "--sets", "0"), "see 'dipsy synth --help'"),
    ("sets text", lambda p, s: synth(p, s, "--epsilon", "1", "--sets", "many"), "see 'dipsy synth --help'"),
    # columns
    ("columns empty", lambda p, s: synth(p, s, "--epsilon", "1", "--columns", ""), "--columns was given but names no column"),
    ("columns commas", lambda p, s: synth(p, s, "--epsilon", "1", "--columns", " , "), "--columns was given but names no column"),
    ("columns unknown", lambda p, s: synth(p, s, "--epsilon", "1", "--columns", "Nope"), "column 'Nope' is not in the domain"),
    ("columns twice", lambda p, s: synth(p, s, "--epsilon", "1", "--columns", "Race,Race"), "more than once"),
    ("check columns empty", lambda p, s: check(p, s, "--columns", ""), "--columns was given but names no column"),
    # method and options
    ("unknown method", lambda p, s: synth(p, s, "--epsilon", "1", "--method", "magic"), "unknown method 'magic'"),
    ("unknown option", lambda p, s: synth(p, s, "--epsilon", "1", "--option", "beta=2"), "no option 'beta'"),
    ("option without value", lambda p, s: synth(p, s, "--epsilon", "1", "--option", "alpha"), "not NAME=VALUE"),
    ("unknown format", lambda p, s: synth(p, s, "--epsilon", "1", "--format", "xlsx"), "see 'dipsy synth --help'"),
    # usage errors from click, in the '; fix' form
    ("synth without arguments", lambda p, s: ["synth"], "Missing argument 'DATA'; see 'dipsy synth --help'"),
    ("unknown flag", lambda p, s: synth(p, s, "--epsilon", "1", "--bogus"), "see 'dipsy synth --help'"),
    ("unknown command", lambda p, s: ["nosuch"], "No such command 'nosuch'; see 'dipsy --help'"),
    ("unknown subcommand", lambda p, s: ["domain", "nosuch"], "see 'dipsy domain --help'"),
    ("missing --domain", lambda p, s: ["synth", p.ce, "--out", s.out, "--epsilon", "1"], "Missing option '--domain'"),
    # data files
    ("missing data", lambda p, s: synth(p, s, "--epsilon", "1", data=p.dir / "missing.csv"), "does not exist"),
    ("data is a folder", lambda p, s: synth(p, s, "--epsilon", "1", data=p.folder), "a_folder"),
    ("data of unknown kind", lambda p, s: synth(p, s, "--epsilon", "1", data=p.text_data), "neither CSV nor Parquet"),
    ("text named parquet", lambda p, s: synth(p, s, "--epsilon", "1", "--columns", "Race", data=p.fake_parquet), "data.parquet"),
    (
        "values outside the domain",
        lambda p, s: synth(p, s, "--epsilon", "1", data=p.bad),
        "column 'Race': 3 rows with values outside the domain",
    ),
    ("header only", lambda p, s: synth(p, s, "--epsilon", "1", data=p.header_only), "no"),
    (
        "duplicated header",
        lambda p, s: synth(p, s, "--epsilon", "1", "--columns", "Race", data=p.dup_header),
        "names the column 'Race' more than once",
    ),
    ("check: header only", lambda p, s: check(p, s, data=p.header_only), "has no rows"),
    ("check: duplicated header", lambda p, s: check(p, s, "--columns", "Race", data=p.dup_header), "more than once"),
    ("check: values outside", lambda p, s: check(p, s, data=p.bad), "'Race': 3 rows"),
    ("check: missing data", lambda p, s: check(p, s, data=p.dir / "missing.csv"), "does not exist"),
    # domain files
    ("missing domain", lambda p, s: synth(p, s, "--epsilon", "1", domain=p.dir / "missing.yaml"), "does not exist"),
    ("domain is a folder", lambda p, s: synth(p, s, "--epsilon", "1", domain=p.folder), "is a folder"),
    ("malformed domain", lambda p, s: synth(p, s, "--epsilon", "1", domain=p.broken), "malformed"),
    ("latin-1 domain", lambda p, s: synth(p, s, "--epsilon", "1", domain=p.latin1), "is not UTF-8"),
    ("binary domain", lambda p, s: synth(p, s, "--epsilon", "1", domain=p.binary), "domain file"),
    ("check: latin-1 domain", lambda p, s: check(p, s, domain=p.latin1), "is not UTF-8"),
    ("check: binary domain", lambda p, s: check(p, s, domain=p.binary), "domain file"),
    ("alias bomb", lambda p, s: check(p, s, domain=p.alias_bomb), "anchor or alias"),
    ("unquoted yes/no", lambda p, s: check(p, s, domain=p.yes_no), "quote"),
    ("unquoted yes as a column", lambda p, s: check(p, s, domain=p.yes_key), "quote"),
    ("numeric without bins", lambda p, s: synth(p, s, "--epsilon", "1", domain=p.no_bins), "numeric without bins"),
    ("10^9 bins", lambda p, s: synth(p, s, "--epsilon", "1", domain=p.bins_bomb), "1,000,000,000 bins"),
    ("10^6 + 1 categories", lambda p, s: check(p, s, domain=p.many_cats), "1,000,001 categories"),
    pytest.param(
        "10^10 cells",
        lambda p, s: synth(p, s, "--epsilon", "1", data=p.cells_data, domain=p.cells_domain),
        "cross-tabulation",
        id="10^10 cells",
    ),
    pytest.param(
        "perturbed-histogram bins=10^10",
        lambda p, s: synth(p, s, "--epsilon", "1", "--method", "perturbed-histogram", "--option", "bins=10000000000"),
        "more than the 1,000,000",
        id="perturbed-histogram bins=10^10",
    ),
    # outputs, checked before any work
    ("out exists", lambda p, s: synth(p, s, "--epsilon", "1", "--out", p.release), "already exists"),
    (
        "overwrite a folder that is no release",
        lambda p, s: synth(p, s, "--epsilon", "1", "--out", p.not_release, "--overwrite"),
        "not a dipsy release",
    ),
    (
        "overwrite a release with other files",
        lambda p, s: synth(p, s, "--epsilon", "1", "--out", p.release_plus, "--overwrite"),
        "notes.txt",
    ),
    ("out is a file", lambda p, s: synth(p, s, "--epsilon", "1", "--out", p.a_file, "--overwrite"), "not a folder"),
    ("out under a file", lambda p, s: synth(p, s, "--epsilon", "1", "--out", p.a_file / "rel"), "not a folder"),
    ("out under /proc", lambda p, s: synth(p, s, "--epsilon", "1", "--out", "/proc/dipsy-nowhere/rel"), "cannot write into"),
    ("ledger is a folder", lambda p, s: synth(p, s, "--epsilon", "1", "--ledger", p.folder), "is a folder"),
    ("ledger under a file", lambda p, s: synth(p, s, "--epsilon", "1", "--ledger", p.a_file / "l.sqlite"), "budget ledger"),
    (
        "ledger under /proc",
        lambda p, s: synth(p, s, "--epsilon", "1", "--ledger", "/proc/dipsy-nowhere/l.sqlite"),
        "budget ledger",
    ),
    ("budget show: ledger is a folder", lambda p, s: ["budget", "show", "--ledger", p.folder], "is a folder"),
    # evaluate
    ("evaluate: corrupt parquet", lambda p, s: evaluate(p, s, release=p.corrupt), "cannot be read"),
    ("evaluate: garbage release.json", lambda p, s: evaluate(p, s, release=p.garbage_json), "not a dipsy release folder"),
    ("evaluate: no release", lambda p, s: evaluate(p, s, release=p.dir / "missing"), "does not exist"),
    ("evaluate: not a release", lambda p, s: evaluate(p, s, release=p.folder), "not a dipsy release folder"),
    (
        "evaluate: report under /proc",
        lambda p, s: evaluate(p, s, "--json", s.work / "m.json", "--report", "/proc/dipsy-nowhere/r.html"),
        "--report",
    ),
    ("evaluate: json is a folder", lambda p, s: evaluate(p, s, "--json", p.folder), "is a folder"),
    ("evaluate: json under a file", lambda p, s: evaluate(p, s, "--json", p.a_file / "m.json"), "not a folder"),
    (
        "evaluate: json and report alike",
        lambda p, s: evaluate(p, s, "--json", s.work / "x", "--report", s.work / "x"),
        "both name",
    ),
    ("evaluate: missing original", lambda p, s: ["evaluate", p.dir / "missing.csv", p.release], "missing.csv"),
]


@pytest.mark.parametrize("name, argv, message", [c if hasattr(c, "marks") else pytest.param(*c, id=c[0]) for c in CASES])
def test_refused_on_one_line_leaving_nothing(capfd, inputs, sandbox, name, argv, message):
    code, _, err = run(capfd, argv(inputs, sandbox))
    assert_refused(code, err, sandbox, message)


def test_there_are_enough_cases():
    assert len(CASES) >= 40


# -- properties -----------------------------------------------------------------------------------


def fresh_sandbox(base: Path) -> SimpleNamespace:
    work = Path(tempfile.mkdtemp(dir=base))
    return SimpleNamespace(work=work, out=work / "rel", ledger=work / "ledger.sqlite", roots=(work,), before=snapshot(work))


@pytest.fixture
def quiet_temp(tmp_path, monkeypatch):
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_as_a_domain_file_are_refused_cleanly(capfd, tmp_path, quiet_temp, inputs, content):
    s = fresh_sandbox(tmp_path)
    domain = s.work / "domain.yaml"
    domain.write_bytes(content)
    s.before = snapshot(s.work, quiet_temp)
    s.roots = (s.work, quiet_temp)
    code, _, err = run(capfd, ["domain", "check", inputs.ce, "--domain", domain])
    assume(code != 0)  # random bytes are never a domain that all CE rows match, but say so
    assert_refused(code, err, s)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(max_size=12) | st.floats().map(repr) | st.integers(-(10**400), 10**400).map(str))
def test_any_epsilon_outside_the_range_is_refused_before_any_work(capfd, tmp_path, quiet_temp, inputs, value):
    try:
        x = float(value)
        ok = EPSILON_RANGE[0] <= x <= EPSILON_RANGE[1]
    except (ValueError, OverflowError):
        ok = False
    assume(not ok and not value.startswith("-"))  # a leading '-' reads as a flag to click
    s = fresh_sandbox(tmp_path)
    s.roots = (s.work, quiet_temp)
    s.before = snapshot(*s.roots)
    code, _, err = run(
        capfd, ["synth", inputs.ce, "--domain", inputs.dom, "--epsilon", value, "--out", s.out, "--ledger", s.ledger]
    )
    assert_refused(code, err, s, "epsilon")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(alphabet=st.sampled_from(" ,;xRaceN\t"), max_size=10))
def test_any_columns_that_name_no_domain_column_are_refused(capfd, tmp_path, quiet_temp, inputs, value):
    names = [c.strip() for c in value.split(",") if c.strip()]
    assume(not names or any(n not in Domain.load(CE_DOMAIN).names for n in names) or len(set(names)) < len(names))
    assume(not value.startswith("-"))
    s = fresh_sandbox(tmp_path)
    s.roots = (s.work, quiet_temp)
    s.before = snapshot(*s.roots)
    code, _, err = run(
        capfd,
        ["synth", inputs.ce, "--domain", inputs.dom, "--epsilon", "1", "--columns", value, "--out", s.out, "--ledger", s.ledger],
    )
    assert_refused(code, err, s)


# -- the memory bombs, under an address-space limit -----------------------------------------------


def test_the_bins_bomb_is_refused_before_any_allocation(inputs, tmp_path):
    limit = 2 << 30  # 2 GiB of address space: enough for Python, pandas and DuckDB, not for 10^9 edges
    argv = [
        "synth",
        str(inputs.ce),
        "--domain",
        str(inputs.bins_bomb),
        "--epsilon",
        "1",
        "--out",
        str(tmp_path / "rel"),
        "--ledger",
        str(tmp_path / "l.sqlite"),
    ]
    cli = [sys.executable, "-c", "import sys; from dipsy.cli import main; sys.exit(main(sys.argv[1:]))", *argv]
    done = subprocess.run(address_limited(limit, cli), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "1,000,000,000 bins" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_check_cells_counts_declared_cells_without_allocating():
    d = Domain.from_sizes({"a": 100_000, "b": 100_000, "c": 2})
    assert check_cells(d, names=["c"]) == 2
    with pytest.raises(DomainError, match=r"a × b × c has 20,000,000,000 cells"):
        check_cells(d)
    assert check_cells(Domain.from_sizes({"a": 2**14, "b": 2**14})) == CELL_LIMIT


def test_a_column_at_the_limit_is_accepted_and_one_past_it_refused():
    spec = {"kind": "numeric", "lower": 0, "upper": 1}
    assert Domain.from_dict({"columns": {"x": {**spec, "bins": MAX_CODES}}}).shape() == (MAX_CODES,)
    with pytest.raises(DomainError, match="more than the 1,000,000 a column may have"):
        Domain.from_dict({"columns": {"x": {**spec, "bins": MAX_CODES + 1}}})


# -- what is not refused: mixed line ends, and budget show of a missing ledger ----------------------


def test_mixed_line_ends_read_as_pandas_reads_them(capfd, inputs):
    code, text, err = run(capfd, ["domain", "check", inputs.mixed, "--domain", inputs.dom])
    assert code == 0 and "all 994 rows match" in text, err


def test_budget_show_of_a_missing_ledger_creates_nothing(capfd, tmp_path):
    path = tmp_path / "missing" / "path.sqlite"
    code, text, err = run(capfd, ["budget", "show", "--ledger", path])
    assert code == 0 and f"no ledger at {path}; nothing has been recorded there" in text, err
    assert list(tmp_path.iterdir()) == []


def test_numpy_engine_refuses_a_frame_with_a_repeated_column():
    frame = pd.DataFrame([[1, 2], [3, 4]], columns=["Race", "Race"])
    with pytest.raises(DataError, match="'Race' more than once"):
        NumpyEngine(frame, Domain.load(CE_DOMAIN).project(["Race"]))


# -- release folders: permissions, stale temporary folders -----------------------------------------


def test_a_release_folder_gets_ordinary_permissions(capfd, tmp_path):
    out = tmp_path / "rel"
    old = os.umask(0o022)
    try:
        code, _, err = run(
            capfd,
            [
                "synth",
                CE_DATA,
                "--domain",
                CE_DOMAIN,
                "--epsilon",
                "1",
                "--columns",
                "Race",
                "--out",
                out,
                "--ledger",
                tmp_path / "l.sqlite",
            ],
        )
    finally:
        os.umask(old)
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert sorted(p.name for p in out.iterdir()) == ["domain.yaml", "release.json", "synthetic_1.parquet"]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _stale(parent: Path, target: str, role: str, pid: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f".{target}.{'old.' if role == 'old' else ''}", dir=parent))
    owner = {"pid": pid, "started": None, "host": socket.gethostname(), "target": target, "role": role}
    folder.with_name(folder.name + ".owner").write_text(json.dumps(owner))
    return folder


def test_stale_temporary_folders_of_killed_runs_are_swept(tmp_path):
    out = tmp_path / "rel"
    dead = _dead_pid()
    stale = _stale(tmp_path, "rel", "new", dead)
    (stale / "synthetic_1.parquet").write_bytes(b"confidential-derived")
    live = _stale(tmp_path, "rel", "new", os.getpid())
    other = _stale(tmp_path, "rel.x", "new", dead)  # another target's: not ours to judge here
    unmarked = Path(tempfile.mkdtemp(prefix=".rel.", dir=tmp_path))
    # a killed overwrite, between its two renames: the previous release is put back
    old = _stale(tmp_path, "rel", "old", dead)
    (old / "rel").mkdir()
    (old / "rel" / "release.json").write_text("{}")
    orphan = tmp_path / ".rel.gone.owner"  # a marker whose folder was renamed into place before the kill
    orphan.write_text(json.dumps({"pid": dead, "started": None, "host": socket.gethostname(), "target": "rel", "role": "new"}))
    removed = sweep_stale(out)
    assert set(removed) == {stale, old}
    assert live.exists() and other.exists() and unmarked.exists()
    assert (out / "release.json").exists()
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {"rel", live.name, live.name + ".owner", other.name, other.name + ".owner", unmarked.name}


def test_a_killed_run_leaves_nothing_the_next_save_does_not_sweep(capfd, tmp_path):
    out = tmp_path / "rel"
    stale = _stale(tmp_path, "rel", "new", _dead_pid())
    code, _, err = run(
        capfd,
        [
            "synth",
            CE_DATA,
            "--domain",
            CE_DOMAIN,
            "--epsilon",
            "1",
            "--columns",
            "Race",
            "--out",
            out,
            "--ledger",
            tmp_path / "l.sqlite",
        ],
    )
    assert code == 0, err
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.sqlite", "rel"]


# -- failures after work began: out of memory, a bug -----------------------------------------------


def _fail_while_drawing(monkeypatch, error: type[BaseException], *args) -> None:
    import dipsy.api

    def draw(*_, **__):
        raise error(*args)

    monkeypatch.setattr(dipsy.api, "_draw", draw)


def test_out_of_memory_mid_run_is_one_line_and_takes_back_the_new_ledger(capfd, sandbox, inputs, monkeypatch):
    """The spend was reserved (creating the ledger) before the run failed: the reservation is
    cancelled, and the ledger this command created, which now records nothing, is removed."""
    _fail_while_drawing(monkeypatch, MemoryError)
    sub = sandbox.work / "new" / "folder"
    code, _, err = run(
        capfd,
        [
            "synth",
            inputs.ce,
            "--domain",
            inputs.dom,
            "--epsilon",
            "1",
            "--columns",
            "Race",
            "--out",
            sub / "rel",
            "--ledger",
            sub / "ledger.sqlite",
        ],
    )
    assert_refused(code, err, sandbox, "out of memory while synthesizing")


def test_an_existing_ledger_is_kept_when_a_run_fails(capfd, sandbox, inputs, monkeypatch):
    sandbox.ledger.write_bytes(b"")  # an empty ledger file the user made: not this command's to remove
    sandbox.before = snapshot(*sandbox.roots)
    _fail_while_drawing(monkeypatch, MemoryError)
    code, _, err = run(capfd, synth(inputs, sandbox, "--epsilon", "1", "--columns", "Race"))
    assert code == 2 and sandbox.ledger.exists(), err


def test_a_bug_is_one_line_with_exit_code_1(capfd, sandbox, inputs, monkeypatch):
    _fail_while_drawing(monkeypatch, RuntimeError, "boom\nsecond line")
    code, _, err = run(capfd, synth(inputs, sandbox, "--epsilon", "1", "--columns", "Race"))
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: internal error: RuntimeError: boom second line") and "DIPSY_TRACEBACK=1" in err
    assert snapshot(*sandbox.roots) == sandbox.before


def test_spill_folders_of_killed_runs_are_swept(quiet_temp):
    from dipsy.engine.duckdb_engine import DuckDBEngine

    stale = quiet_temp / "dipsy-duckdb-killed"
    stale.mkdir()
    (stale / "spilled.block").write_bytes(b"confidential rows")
    (stale / MARKER).write_text(json.dumps({"pid": _dead_pid(), "started": None, "host": socket.gethostname()}))
    unmarked = quiet_temp / "dipsy-duckdb-unmarked"
    unmarked.mkdir()
    engine = DuckDBEngine(CE_DATA, Domain.load(CE_DOMAIN).project(["Race"]))
    assert not stale.exists() and unmarked.exists()
    engine.close()
    assert sorted(p.name for p in quiet_temp.iterdir()) == ["dipsy-duckdb-unmarked"]


# -- the ends of the accepted range work --------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(
            ["--epsilon", str(EPSILON_RANGE[0]), "--sets", "10", "--accept-noise"], id="dirichlet-multinomial at the least ε"
        ),
        pytest.param(["--epsilon", str(EPSILON_RANGE[1])], id="dirichlet-multinomial at the greatest ε"),
        pytest.param(
            ["--method", "laplace-sanitizer", "--epsilon", str(EPSILON_RANGE[1])], id="laplace-sanitizer at the greatest ε"
        ),
    ],
)
def test_the_ends_of_the_accepted_range_work(capfd, tmp_path, args):
    code, _, err = run(
        capfd,
        [
            "synth",
            CE_DATA,
            "--domain",
            CE_DOMAIN,
            "--columns",
            "Race",
            "--out",
            tmp_path / "rel",
            "--ledger",
            tmp_path / "l.sqlite",
            *args,
        ],
    )
    assert code == 0, err
