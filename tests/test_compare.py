"""`dipsy compare`: several releases of one column beside the original."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN

import dipsy
from dipsy.cli import main
from dipsy.errors import DipsyError
from dipsy.evaluation.compare import compare_releases
from dipsy.evaluation.numeric import ecdf_distances


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("releases")
    made = {}
    for name, method, sets, seed in (
        ("hist", "perturbed-histogram", 3, None),
        ("smooth", "smoothed-histogram", 1, None),
        ("seeded", "perturbed-histogram", 2, 7),
    ):
        release = dipsy.synthesize(
            CE_DATA,
            CE_DOMAIN,
            method=method,
            columns=["Expenditure", "Race"],
            epsilon=2.0,
            sets=sets,
            seed=seed,
            ledger=folder / "ledger.sqlite",
            dataset_id="ce",
            accept_noise=True,
        )
        made[name] = release.save(folder / name)
    return made


def test_each_release_is_measured_set_by_set_against_the_original(releases):
    result = compare_releases(CE_DATA, [releases["hist"], releases["smooth"]], "Expenditure")
    x = pd.read_csv(CE_DATA)["Expenditure"].to_numpy(float)
    assert result["original"]["n"] == x.size and result["original"]["mean"] == pytest.approx(x.mean())
    hist, smooth = result["releases"]
    assert hist["sets"] == 3 and smooth["sets"] == 1 and len(hist["U_m"]) == 3
    for k in range(3):
        y = pd.read_parquet(releases["hist"] / f"synthetic_{k + 1}.parquet")["Expenditure"].to_numpy(float)
        assert (hist["U_m"][k], hist["U_a"][k]) == pytest.approx(ecdf_distances(x, y))
        assert hist["mean"][k] == pytest.approx(y.mean())
    assert hist["U_m_mean"] == pytest.approx(np.mean(hist["U_m"]))
    assert hist["kind"] == "dp" and hist["epsilon"] == pytest.approx(2.0) and "ε = 2" in hist["guarantee"]
    # at ε = 2 over 994 rows the smoothed histogram is mostly the uniform (δ near 1), the perturbed one is not
    assert smooth["U_m_mean"] > hist["U_m_mean"]


def test_releases_under_different_relations_are_noted(releases):
    """The perturbed histogram (add/remove) beside the smoothed one (substitute only): their budgets are
    not on one scale, and the comparison says so; two releases under one relation get no note."""
    mixed = compare_releases(CE_DATA, [releases["hist"], releases["smooth"]], "Expenditure")
    same = compare_releases(CE_DATA, [releases["hist"], releases["seeded"]], "Expenditure")
    hist, smooth = mixed["releases"]
    assert hist["neighbouring"].startswith("add/remove") and smooth["neighbouring"].startswith("substitute")
    assert len(hist["rows"]) == 3 and len(mixed["notes"]) == 1 and "different neighbouring relations" in mixed["notes"][0]
    assert same["notes"] == []


def test_a_seeded_release_is_shown_as_a_test_release(releases):
    (seeded,) = compare_releases(CE_DATA, [releases["seeded"]], "Expenditure")["releases"]
    assert seeded["kind"] == "test release" and "not private" in seeded["guarantee"]


def test_bad_columns_are_refused(releases):
    with pytest.raises(DipsyError, match="compare measures integer and numeric"):
        compare_releases(CE_DATA, [releases["hist"]], "Race")
    with pytest.raises(DipsyError, match="does not hold the column 'Income'"):
        compare_releases(CE_DATA, [releases["hist"]], "Income")
    with pytest.raises(DipsyError, match="at least one release"):
        compare_releases(CE_DATA, [], "Expenditure")


def test_the_command_writes_the_page_and_the_numbers(releases, tmp_path, capsys):
    page, numbers = tmp_path / "out" / "compare.html", tmp_path / "compare.json"
    code = main(
        [
            "compare",
            str(CE_DATA),
            str(releases["hist"]),
            str(releases["smooth"]),
            "--column",
            "Expenditure",
            "--report",
            str(page),
            "--json",
            str(numbers),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0 and "perturbed-histogram" in text and "smoothed-histogram" in text
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "data:image/png;base64," in html and "Guarantees of different kinds" not in html
    assert [r["method"] for r in json.loads(numbers.read_text())["releases"]] == ["perturbed-histogram", "smoothed-histogram"]
    code = main(["compare", str(CE_DATA), str(releases["hist"]), "--column", "Race", "--report", str(tmp_path / "race.html")])
    assert code == 2 and "compare measures integer and numeric" in capsys.readouterr().err
    assert not (tmp_path / "race.html").exists()
