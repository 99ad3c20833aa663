"""dipsy.Synthesizer: fit once (the one charge, in the command line's default ledger), sample the
sets charged and no more, and a report of the fitted release."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN

import dipsy
from dipsy.errors import DipsyError
from dipsy.privacy import Ledger


def test_fit_charges_once_in_the_default_ledger_and_sample_hands_out_only_the_charged_sets(private_ledger):
    # unseeded: a seeded release is a test release, which the ledger records apart and never counts
    s = dipsy.Synthesizer("dirichlet-multinomial", epsilon=4.0, sets=2, columns=["Race"], dataset_id="ce")
    assert s.fit(CE_DATA, CE_DOMAIN) is s
    first, second = s.sample(), s.sample()
    pd.testing.assert_frame_equal(first, s.release.tables[0])
    pd.testing.assert_frame_equal(second, s.release.tables[1])
    with pytest.raises(DipsyError, match="another would be another charge"):
        s.sample()
    spent = Ledger(private_ledger).spent("ce")  # the default ledger ($DIPSY_LEDGER), as `dipsy synth` uses
    assert spent.epsilon == pytest.approx(4.0) and len(Ledger(private_ledger).spends("ce")) == 2  # ε/2 per set, once


def test_opting_out_of_the_ledger_is_explicit_and_stated(private_ledger, tmp_path):
    s = dipsy.Synthesizer("dirichlet-multinomial", epsilon=4.0, seed=3, columns=["Race"], ledger=False).fit(CE_DATA, CE_DOMAIN)
    assert not private_ledger.exists()
    meta = json.loads((s.release.save(tmp_path / "out") / "release.json").read_text())
    assert meta["request"]["recorded_in_ledger"] is False


def test_synthesize_and_discovery_record_in_the_default_ledger_unless_told_not_to(private_ledger, tmp_path):
    # a notebook's dipsy.synthesize is on record as `dipsy synth` is: unseeded, it counts against the data set
    release = dipsy.synthesize(CE_DATA, CE_DOMAIN, epsilon=2.0, columns=["Race"], dataset_id="ce")
    assert Ledger(private_ledger).spent("ce").epsilon == pytest.approx(2.0)
    meta = json.loads((release.save(tmp_path / "on") / "release.json").read_text())
    assert meta["request"]["recorded_in_ledger"] is True
    dipsy.synthesize(CE_DATA, CE_DOMAIN, epsilon=2.0, columns=["Race"], dataset_id="ce", ledger=False)
    assert Ledger(private_ledger).spent("ce").epsilon == pytest.approx(2.0)  # the opted-out one is not
    skeleton = {"name": "ce", "columns": {"Race": {"kind": "categorical", "categories": "TODO"}}}
    dipsy.discover_domain(CE_DATA, skeleton, epsilon=1.0, delta=1e-8, dataset_id="ce-discovery")
    assert [s["epsilon"] for s in Ledger(private_ledger).spends("ce-discovery")] == [pytest.approx(1.0)]


def test_num_rows_takes_records_of_a_charged_set_and_never_more():
    s = dipsy.Synthesizer("dirichlet-multinomial", epsilon=4.0, seed=3, columns=["Race"], ledger=False).fit(CE_DATA, CE_DOMAIN)
    n = len(s.release.tables[0])
    with pytest.raises(DipsyError, match="a set holds"):
        s.sample(n + 1)
    assert len(s.sample(10)) == 10


def test_errors_speak_python_and_the_report_is_written(tmp_path):
    with pytest.raises(DipsyError, match="epsilon=") as refused:
        dipsy.Synthesizer("dirichlet-multinomial", epsilon=-1.0, ledger=False).fit(CE_DATA, CE_DOMAIN)
    assert "--epsilon" not in str(refused.value)
    s = dipsy.Synthesizer("dirichlet-multinomial", epsilon=4.0, seed=3, columns=["Race", "UrbanRural"], ledger=False)
    metrics = s.fit(CE_DATA, CE_DOMAIN).report(tmp_path / "report.html")
    assert (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert metrics["dataset"]["columns"] == ["UrbanRural", "Race"] or set(metrics["dataset"]["columns"]) == {"Race", "UrbanRural"}
    # a release of dipsy.synthesize writes its own, the same page for the same release and data
    again = s.release.report(CE_DATA, tmp_path / "again.html")
    assert again["verdicts"] == metrics["verdicts"]
    assert (tmp_path / "again.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    with pytest.raises(DipsyError, match="sensitive= names 'nope'") as refused:  # in the API's terms
        s.release.report(CE_DATA, tmp_path / "bad.html", sensitive=["nope"])
    assert "--sensitive" not in str(refused.value) and not (tmp_path / "bad.html").exists()


def test_the_notebook_example_runs(tmp_path, monkeypatch, private_ledger):
    import runpy

    from conftest import ROOT

    monkeypatch.chdir(tmp_path)  # it writes build/notebook/report.html under the working folder
    found = runpy.run_path(str(ROOT / "examples" / "notebook.py"))
    assert (tmp_path / "build" / "notebook" / "report.html").exists()
    assert len(found["first"]) == len(found["second"]) > 0
    assert Ledger(private_ledger).spent("ce-notebook").epsilon == pytest.approx(4.0)


def test_a_progress_callback_is_told_every_step_and_each_set():
    """``progress=callable`` gets what a terminal's bar shows: the measurements, aim's rounds with the
    marginal chosen and the budget left, then each set drawn."""
    heard = []
    dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        method="aim",
        rho=2.0,
        seed=1,
        ledger=False,
        accept_noise=True,
        columns=["Race", "UrbanRural"],
        options={"rounds": 2},
        progress=lambda what, done, total: heard.append((what, done, total)),
    )
    assert heard[0][0].startswith("measuring aim: one-way marginal Race, discrete Gaussian") and heard[0][1:] == (1, 2)
    rounds = [h for h in heard if h[0].startswith("aim: round 1:")]
    assert rounds and rounds[0][1:] == (1, 2) and "ρ left" in rounds[0][0] and "of 2" in rounds[0][0]
    assert heard[-1] == ("synthetic set 1 of 1", 1, 1)
