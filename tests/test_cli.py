"""The command line and the Python API end to end: releases, errors, the ledger."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN
from hypothesis import given, settings
from hypothesis import strategies as st

import dipsy
from dipsy.api import plan_forecast
from dipsy.cli import main
from dipsy.errors import DataError, DipsyError
from dipsy.privacy import Ledger


def run(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def synth(capsys, out, *extra):
    return run(capsys, "synth", CE_DATA, "--domain", CE_DOMAIN, "--epsilon", "5", "--out", out, *extra)


def test_methods_lists_the_registry(capsys):
    code, text, _ = run(capsys, "methods")
    assert code == 0 and "dirichlet-multinomial" in text and "pure-DP" in text


def test_ce_race_release(capsys, tmp_path):
    out = tmp_path / "rel"
    code, text, err = synth(capsys, out, "--columns", "Race")
    assert code == 0, err
    assert "alpha = 6.742953" in text and "test release" not in text
    meta = json.loads((out / "release.json").read_text())
    assert meta["method"] == "dirichlet-multinomial" and meta["seed"] is None
    assert meta["privacy"]["definition"] == "pure-DP" and meta["privacy"]["differentially_private"] is True
    assert meta["privacy"]["relation"] == {"kind": "substitute", "unit": "record", "theta": 1}
    assert meta["privacy"]["epsilon_total"] == 5.0 == meta["privacy"]["epsilon_per_set"]
    assert "n = 994" in meta["privacy"]["public"][0] and "one row" in meta["privacy"]["neighbouring"]
    assert meta["rows"] == [994] and meta["columns"] == ["Race"]
    assert meta["domain_sha256"] == dipsy.Domain.load(CE_DOMAIN).project(["Race"]).sha256()
    table = pd.read_parquet(out / "synthetic_1.parquet")
    assert len(table) == 994 and set(table["Race"]) <= set(range(1, 7))
    assert dipsy.Domain.load(out / "domain.yaml").names == ("Race",)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel"]  # no temporary folder left (the ledger is conftest's)


def test_without_a_method_the_kind_of_budget_chooses_it_and_the_terminal_says_so(capsys, tmp_path):
    # ε alone: the Dirichlet-multinomial (above); with δ: privsyn, which works on several columns
    code, text, err = synth(capsys, tmp_path / "z", "--delta", "1e-9", "--columns", "Race,Income", "--seed", "1")
    assert code == 0, err
    assert json.loads((tmp_path / "z" / "release.json").read_text())["method"] == "privsyn"
    assert "no --method given: privsyn, the default for a budget with δ or ρ" in text
    code, text, err = synth(capsys, tmp_path / "e", "--columns", "Race", "--seed", "1")
    assert code == 0 and "no --method given: dirichlet-multinomial, the default for a budget of ε alone" in text
    code, text, err = synth(capsys, tmp_path / "n", "--columns", "Race", "--seed", "1", "--method", "dirichlet-multinomial")
    assert code == 0 and "no --method given" not in text
    assert plan_forecast(CE_DATA, CE_DOMAIN, rho=0.1, columns=["Race"]).method == "privsyn"


def test_a_seeded_release_says_on_the_terminal_that_it_is_a_test_release(capsys, tmp_path):
    out = tmp_path / "rel"
    code, text, err = synth(capsys, out, "--columns", "Race", "--seed", "123")
    assert code == 0, err
    assert "TEST RELEASE" in text and "not differentially private" in text
    meta = json.loads((out / "release.json").read_text())
    assert meta["seed"] == 123 and meta["privacy"]["differentially_private"] is False
    assert meta["privacy"]["if_unseeded"]["epsilon_total"] == 5.0


def test_sets_and_csv_format(capsys, tmp_path):
    out = tmp_path / "rel"
    code, _, err = synth(capsys, out, "--sets", "3", "--format", "csv", "--columns", "Race,UrbanRural")
    assert code == 0, err
    meta = json.loads((out / "release.json").read_text())
    assert meta["sets"] == 3 and meta["privacy"]["epsilon_per_set"] == pytest.approx(5 / 3)
    assert len(meta["spends"]) == 3 and meta["seed"] is None
    for k in (1, 2, 3):
        assert list(pd.read_csv(out / f"synthetic_{k}.csv").columns) == ["Race", "UrbanRural"]


def test_same_seed_same_release(capsys, tmp_path):
    for name in ("a", "b"):
        assert synth(capsys, tmp_path / name, "--seed", "9")[0] == 0
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "a" / "synthetic_1.parquet"), pd.read_parquet(tmp_path / "b" / "synthetic_1.parquet")
    )


@pytest.fixture
def bad_data(tmp_path):
    frame = pd.read_csv(CE_DATA)
    frame.loc[[3, 10, 11], "Race"] = 9
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    return path


ERRORS = [
    (["--epsilon", "0"], "epsilon must be a finite number > 0"),
    (["--epsilon", "-1"], "epsilon must be a finite number > 0"),
    (["--epsilon", "abc"], "epsilon must be a finite number > 0"),
    (["--epsilon", "nan"], "epsilon must be a finite number > 0"),
    (["--epsilon", "1", "--method", "magic"], "unknown method 'magic'"),
    (["--epsilon", "1", "--option", "beta=2"], "no option 'beta'"),
    (["--epsilon", "1", "--option", "alpha"], "not NAME=VALUE"),
    (["--epsilon", "1", "--option", "alpha=0.01"], "below n/(e^(ε/m) - 1)"),
    (["--epsilon", "1", "--columns", "Nope"], "column 'Nope' is not in the domain"),
    (["--epsilon", "1", "--columns", "Income"], None),  # binned numeric: fine
    (["--epsilon", "1", "--sets", "0"], "--sets"),
    (["--epsilon", "1", "--format", "xlsx"], "--format"),
]


@pytest.mark.parametrize("args, message", ERRORS)
def test_bad_arguments_exit_2_on_one_line_and_leave_no_folder(capsys, tmp_path, args, message):
    out = tmp_path / "rel"
    code, _, err = run(capsys, "synth", CE_DATA, "--domain", CE_DOMAIN, "--out", out, *args)
    if message is None:
        assert code == 0, err
        return
    assert code == 2
    assert message in err and err.startswith("error: ") and err.count("\n") == 1
    assert not out.exists()


def test_bad_files_exit_2(capsys, tmp_path, bad_data):
    out = tmp_path / "rel"
    (tmp_path / "broken.yaml").write_text("columns: [Race")
    (tmp_path / "nobins.yaml").write_text("columns:\n  Income: {kind: numeric, lower: 0, upper: 1000000}\n")
    cases = [
        (CE_DATA, tmp_path / "missing.yaml", "does not exist"),
        (CE_DATA, tmp_path / "broken.yaml", "malformed"),
        (CE_DATA, tmp_path / "nobins.yaml", "numeric without bins"),
        (tmp_path / "missing.csv", CE_DOMAIN, "missing.csv"),
        (bad_data, CE_DOMAIN, "column 'Race': 3 rows with values outside the domain (e.g. 9)"),
    ]
    for data, domain, message in cases:
        code, _, err = run(capsys, "synth", data, "--domain", domain, "--epsilon", "1", "--out", out)
        assert code == 2 and message in err and err.count("\n") == 1, err
        assert not out.exists()


def test_invalid_rows_can_be_dropped_and_only_the_terminal_says_how_many(capsys, tmp_path, bad_data):
    out = tmp_path / "rel"
    code, text, err = run(
        capsys, "synth", bad_data, "--domain", CE_DOMAIN, "--epsilon", "1", "--out", out, "--on-invalid", "drop", "--accept-noise"
    )
    assert code == 0, err
    assert "3 row(s) that did not match the domain were dropped" in text
    meta = json.loads((out / "release.json").read_text())
    assert meta["rows"] == [991] and "notes" not in meta  # the count is the operator's, never the release's
    assert "dropped" in meta["on_invalid"] and "3" not in meta["on_invalid"]


def test_existing_folder_is_refused_unless_overwrite(capsys, tmp_path):
    out = tmp_path / "rel"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    code, _, err = synth(capsys, out)
    assert code == 2 and "already exists" in err and (out / "keep.txt").exists()
    code, _, err = synth(capsys, out, "--overwrite")  # not a release: --overwrite never deletes it
    assert code == 2 and "not a dipsy release" in err and (out / "keep.txt").exists()
    (out / "keep.txt").unlink()
    out.rmdir()
    assert synth(capsys, out)[0] == 0
    first = json.loads((out / "release.json").read_text())["release_id"]
    code, _, err = synth(capsys, out, "--overwrite")  # a release: replaced
    assert code == 0, err
    assert json.loads((out / "release.json").read_text())["release_id"] != first


def test_ledger_cap_refuses_a_release_that_would_pass_it(capsys, tmp_path):
    ledger = tmp_path / "own.sqlite"
    first = synth(capsys, tmp_path / "r1", "--ledger", ledger, "--budget-cap", "8", "--dataset-id", "ce")
    assert first[0] == 0, first[2]
    code, _, err = synth(capsys, tmp_path / "r2", "--ledger", ledger, "--dataset-id", "ce")
    assert code == 2 and "cap" in err and not (tmp_path / "r2").exists()
    assert Ledger(ledger).spent("ce").epsilon == 5.0
    code, text, _ = run(capsys, "budget", "show", "--ledger", ledger)
    assert code == 0 and "ce" in text and "ε = 5" in text and "ε = 8" in text
    code, text, _ = run(capsys, "budget", "show", "--ledger", ledger, "--dataset-id", "ce")
    assert code == 0 and "set 1 of 1" in text


def test_default_ledger_names_the_data_by_its_sha256(capsys, tmp_path, private_ledger):
    assert synth(capsys, tmp_path / "r")[0] == 0
    [total] = Ledger(private_ledger).totals()
    assert total.dataset_id == dipsy.api.fingerprint(CE_DATA) and len(total.dataset_id) == 64


def test_domain_check(capsys, bad_data):
    code, text, _ = run(capsys, "domain", "check", CE_DATA, "--domain", CE_DOMAIN)
    assert code == 0 and "all 994 rows match" in text
    code, _, err = run(capsys, "domain", "check", bad_data, "--domain", CE_DOMAIN)
    assert code == 2 and "'Race': 3 rows" in err
    code, text, _ = run(capsys, "domain", "check", bad_data, "--domain", CE_DOMAIN, "--on-invalid", "drop")
    assert code == 0 and "3 row(s) would be dropped; 991 kept" in text


def test_api_mirrors_the_cli(tmp_path):
    frame = pd.read_csv(CE_DATA)
    release = dipsy.synthesize(frame, CE_DOMAIN, epsilon=5.0, columns=["Race"], seed=1, ledger=tmp_path / "l.sqlite")
    assert release.statement.claim()["epsilon_total"] == 5.0 and len(release.tables) == 1
    assert release.parameters["alpha"] == pytest.approx(6.742953, abs=1e-6)
    release.save(tmp_path / "rel", format="csv")
    assert (tmp_path / "rel" / "synthetic_1.csv").exists()
    [row] = Ledger(tmp_path / "l.sqlite").spends(dipsy.api.fingerprint(frame))  # seeded: a test release, not counted
    assert (row["epsilon"], row["guarantee"]) == (5.0, "test")


def test_the_api_names_its_parameters_where_the_command_line_names_flags(tmp_path, capsys):
    """The same bad input: the command line's fix names --on-invalid drop, the API's on_invalid="drop"."""
    bad = pd.read_csv(CE_DATA)
    bad.loc[0, "Race"] = 99
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(DipsyError) as err:
        dipsy.synthesize(tmp_path / "bad.csv", CE_DOMAIN, epsilon=5.0, columns=["Race"], seed=1)
    assert 'on_invalid="drop"' in str(err.value) and "--" not in str(err.value)
    assert 'on_invalid="drop"' in err.value.fix and isinstance(err.value, DataError)
    code = main(["synth", str(tmp_path / "bad.csv"), "--domain", str(CE_DOMAIN), "--columns", "Race", "--epsilon", "5",
                 "--seed", "1", "--out", str(tmp_path / "out"), "--ledger", str(tmp_path / "l.sqlite")])  # fmt: skip
    assert code == 2 and "--on-invalid drop" in capsys.readouterr().err


def test_console_script_runs():
    done = subprocess.run([sys.executable, "-m", "dipsy", "methods"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "dirichlet-multinomial" in done.stdout


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.text(max_size=8), st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5)))
def test_any_epsilon_that_is_not_a_positive_number_is_refused_before_reading_data(value):
    try:
        ok = math.isfinite(float(value)) and float(value) > 0
    except ValueError:
        ok = False
    if ok:
        return
    with pytest.raises(DipsyError, match="epsilon must be a finite number > 0"):
        dipsy.synthesize("/nonexistent.csv", "/nonexistent.yaml", epsilon=value)


def test_a_file_that_is_not_what_its_name_says_exits_2(capsys, tmp_path):
    fake = tmp_path / "data.parquet"
    fake.write_text("UrbanRural,Race\n1,2\n")
    code, _, err = run(
        capsys, "synth", fake, "--domain", CE_DOMAIN, "--epsilon", "1", "--columns", "Race", "--out", tmp_path / "rel"
    )
    assert code == 2 and "data.parquet" in err and err.count("\n") == 1 and not (tmp_path / "rel").exists()
