"""Outputs never touch inputs, the ledger protects itself, public inputs are not the data (DESIGN rule 8).

Every case runs ``dipsy.cli.main`` as a careless or malicious user would and asserts: exit code 2,
one line ``error: <problem>; <fix>`` on standard error, and every file the command was pointed at
byte for byte as it was (the data, the domain, the release's files, the ledger).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN

from dipsy.cli import main
from dipsy.privacy import Ledger, PureDP
from dipsy.privacy.relation import ADD_REMOVE


def run(capsys, *args) -> tuple[int, str]:
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


@pytest.fixture
def world(tmp_path, capsys, private_ledger):
    """The CE data and domain, a release of it recorded in the default ledger, and a second ledger."""
    data, domain = tmp_path / "ce.csv", tmp_path / "domain.yaml"
    shutil.copy(CE_DATA, data)
    shutil.copy(CE_DOMAIN, domain)
    code, err = run(
        capsys,
        "synth",
        data,
        "--domain",
        domain,
        "--method",
        "dirichlet-multinomial",
        "--columns",
        "Race",
        "--epsilon",
        "5",
        "--out",
        tmp_path / "rel",
        "--dataset-id",
        "ce",
    )
    assert code == 0, err
    other = tmp_path / "books" / "other.sqlite"
    code, err = run(
        capsys,
        "synth",
        data,
        "--domain",
        domain,
        "--method",
        "dirichlet-multinomial",
        "--columns",
        "Race",
        "--epsilon",
        "5",
        "--out",
        tmp_path / "rel2",
        "--dataset-id",
        "ce",
        "--ledger",
        other,
    )
    assert code == 0, err
    return {
        "data": data,
        "domain": domain,
        "release": tmp_path / "rel",
        "ledger": private_ledger,
        "other": other,
        "tmp": tmp_path,
    }


def refused(capsys, world, args, why, watched):
    before = {p: digest(p) for p in watched}
    code, err = run(capsys, *args)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and why in err, err
    assert {p: digest(p) for p in watched} == before


EVALUATE = ["evaluate", "{data}", "{release}"]
CASES = [
    ("evaluate --report onto the data (E17)", EVALUATE + ["--report", "{data}"], "which is the data", "data"),
    ("evaluate --json onto the data (E18)", EVALUATE + ["--json", "{data}"], "which is the data", "data"),
    (
        "evaluate --report onto release.json (E19)",
        EVALUATE + ["--report", "{release}/release.json"],
        "inside the release",
        "release.json",
    ),
    (
        "evaluate --json onto the domain (E20)",
        EVALUATE + ["--domain", "{domain}", "--json", "{domain}"],
        "which is the --domain file",
        "domain",
    ),
    ("evaluate --json onto the default ledger (E31)", EVALUATE + ["--json", "{ledger}"], "budget ledger", "ledger"),
    ("evaluate --report onto another ledger dipsy made (E32)", EVALUATE + ["--report", "{other}"], "budget ledger", "other"),
    (
        "compare --json onto the data (C08)",
        ["compare", "{data}", "{release}", "--column", "Race", "--json", "{data}"],
        "which is the data",
        "data",
    ),
    (
        "compare --report onto the data (C09)",
        ["compare", "{data}", "{release}", "--column", "Race", "--report", "{data}"],
        "which is the data",
        "data",
    ),
    (
        "compare --json onto the ledger (C13)",
        ["compare", "{data}", "{release}", "--column", "Race", "--json", "{ledger}"],
        "budget ledger",
        "ledger",
    ),
    (
        "plan --json onto the data (PL05)",
        [
            "plan",
            "{data}",
            "--domain",
            "{domain}",
            "--method",
            "dirichlet-multinomial",
            "--epsilon",
            "1",
            "--columns",
            "Race",
            "--json",
            "{data}",
        ],
        "which is the data",
        "data",
    ),
    (
        "plan --json onto the ledger (PL14)",
        [
            "plan",
            "{data}",
            "--domain",
            "{domain}",
            "--method",
            "dirichlet-multinomial",
            "--epsilon",
            "1",
            "--columns",
            "Race",
            "--json",
            "{other}",
        ],
        "budget ledger",
        "other",
    ),
    (
        "evaluate --json through a symbolic link to the data",
        EVALUATE + ["--json", "{tmp}/link.json"],
        "which is the data",
        "data",
    ),
    ("evaluate --json onto a hard link of the data", EVALUATE + ["--json", "{tmp}/hard.json"], "which is the data", "data"),
    (
        "synth --ledger onto the data",
        [
            "synth",
            "{data}",
            "--domain",
            "{domain}",
            "--method",
            "dirichlet-multinomial",
            "--columns",
            "Race",
            "--epsilon",
            "1",
            "--out",
            "{tmp}/x",
            "--ledger",
            "{data}",
        ],
        "--ledger names",
        "data",
    ),
    (
        "synth --overwrite of a release folder that holds the domain",
        [
            "synth",
            "{data}",
            "--domain",
            "{release}/domain.yaml",
            "--method",
            "dirichlet-multinomial",
            "--columns",
            "Race",
            "--epsilon",
            "1",
            "--out",
            "{release}",
            "--overwrite",
        ],
        "holds the --domain file",
        "release.json",
    ),
]


@pytest.mark.parametrize("name, args, why, target", CASES, ids=[c[0] for c in CASES])
def test_an_output_that_is_an_input_is_refused_before_any_work(world, capsys, name, args, why, target):
    os.symlink(world["data"], world["tmp"] / "link.json")
    os.link(world["data"], world["tmp"] / "hard.json")
    paths = {k: str(v) for k, v in world.items()}
    args = [a.format(**paths) for a in args]
    watched = [world["data"], world["domain"], world["ledger"], world["other"], *sorted(world["release"].iterdir())]
    refused(capsys, world, args, why, watched)
    assert not (world["tmp"] / "x").exists()


def test_a_device_is_no_output(world, capsys):
    refused(capsys, world, ["evaluate", world["data"], world["release"], "--json", "/dev/null"], "a device", [world["data"]])


def test_a_ledger_dipsy_made_that_is_gone_is_an_error_not_a_fresh_start(world, capsys):
    """A deleted or moved ledger would let the next release start from zero spent."""
    world["other"].rename(world["tmp"] / "moved.sqlite")
    code, err = run(
        capsys,
        "synth",
        world["data"],
        "--domain",
        world["domain"],
        "--method",
        "dirichlet-multinomial",
        "--columns",
        "Race",
        "--epsilon",
        "1",
        "--out",
        world["tmp"] / "y",
        "--ledger",
        world["other"],
        "--dataset-id",
        "ce",
    )
    assert code == 2 and "that dipsy created is missing" in err and "restore it" in err, err
    assert not world["other"].exists() and not (world["tmp"] / "y").exists()
    code, err = run(capsys, "budget", "show", "--ledger", world["other"])
    assert code == 2 and "is missing" in err


@pytest.mark.parametrize("how", ["another application's database", "another schema", "not SQLite"])
def test_a_file_that_is_not_a_ledger_is_neither_read_nor_written(world, capsys, how):
    path = world["tmp"] / "foreign.sqlite"
    if how == "not SQLite":
        path.write_text("name,value\nx,1\n")
    else:
        with sqlite3.connect(path) as db:
            if how == "another application's database":
                db.execute("PRAGMA application_id = 1234")
            db.execute("CREATE TABLE spends (x)" if how == "another schema" else "CREATE TABLE notes (x)")
    before = digest(path)
    code, err = run(capsys, "budget", "show", "--ledger", path)
    assert code == 2 and "is not a dipsy budget ledger" in err, err
    code, err = run(
        capsys,
        "synth",
        world["data"],
        "--domain",
        world["domain"],
        "--method",
        "dirichlet-multinomial",
        "--columns",
        "Race",
        "--epsilon",
        "1",
        "--out",
        world["tmp"] / "z",
        "--ledger",
        path,
    )
    assert code == 2 and "is not a dipsy budget ledger" in err, err
    assert digest(path) == before and not (world["tmp"] / "z").exists()


def test_a_ledger_carries_dipsys_application_id(world):
    with sqlite3.connect(world["ledger"]) as db:
        assert db.execute("PRAGMA application_id").fetchone()[0] == 0x64697073


@pytest.mark.parametrize("given", ["", "   "])
def test_an_empty_dataset_id_is_refused(world, capsys, given):
    """R12h–j: an id that expands to nothing escaped the data set's cap."""
    code, err = run(
        capsys,
        "synth",
        world["data"],
        "--domain",
        world["domain"],
        "--method",
        "dirichlet-multinomial",
        "--columns",
        "Race",
        "--epsilon",
        "1",
        "--out",
        world["tmp"] / "e",
        "--dataset-id",
        given,
    )
    assert code == 2 and "is empty" in err, err
    assert len(Ledger(world["ledger"]).spends()) == 1
    import dipsy

    with pytest.raises(dipsy.errors.DipsyError, match="is empty"):
        dipsy.synthesize(
            pd.read_csv(world["data"]), world["domain"], columns=["Race"], epsilon=1.0, dataset_id=given, ledger=world["ledger"]
        )


@pytest.mark.parametrize("copy", ["the file itself", "a byte copy", "the rows as Parquet"])
def test_a_public_input_that_is_the_data_is_refused(world, capsys, copy):
    """M76, M77: dpsyn's public= and rdt's structure= naming the confidential file were taken as public."""
    frame = pd.read_csv(world["data"])
    public = {
        "the file itself": world["data"],
        "a byte copy": world["tmp"] / "copy.csv",
        "the rows as Parquet": world["tmp"] / "copy.parquet",
    }[copy]
    if copy == "a byte copy":
        shutil.copy(world["data"], public)
    elif copy != "the file itself":
        frame.sample(frac=1.0, random_state=1).to_parquet(public)
    for method, option in (("dpsyn", f"public={public}"), ("rdt", f"structure={public}")):
        budget = ["--epsilon", "1", "--delta", "1e-9"] if method == "dpsyn" else ["--epsilon", "1", "--option", "sensitive=Race"]
        code, err = run(
            capsys,
            "synth",
            world["data"],
            "--domain",
            world["domain"],
            "--method",
            method,
            *budget,
            "--option",
            option,
            "--out",
            world["tmp"] / f"{method}-out",
            "--columns",
            "UrbanRural,Race",
        )
        assert code == 2 and "a file given as public" in err and "confidential data" in err, err
        assert not (world["tmp"] / f"{method}-out").exists()
    assert len(Ledger(world["ledger"]).spends()) == 1  # nothing charged


def test_the_record_of_ledgers_forgets_one_a_failed_first_run_took_back(tmp_path):
    """A command that created a ledger and failed before recording anything removes it (cli's undo)
    and takes it out of the record, so the next run may create it again; one that did record is kept."""
    from dipsy.privacy.known import check_not_lost, forget, known_ledgers, record_path

    book = tmp_path / "l.sqlite"
    Ledger(book).set_cap("d", PureDP(1.0), ADD_REMOVE)
    assert Path(os.path.realpath(book)) in known_ledgers()
    book.unlink()
    with pytest.raises(Exception, match="is missing"):
        check_not_lost(book)
    forget(book)
    check_not_lost(book)
    assert not record_path().exists()  # an empty record leaves nothing behind
