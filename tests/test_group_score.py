"""The per-group k-marginal score (dipsy.evaluation.groups): hand values, a plain pandas
re-statement on random data, empty and extra groups, and the CLI/report path."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from dipsy.domain import Domain
from dipsy.errors import DataError, DipsyError
from dipsy.evaluation.groups import grouped_kmarginal

DOMAIN = Domain.from_sizes({"g": 3, "a": 2, "b": 3, "c": 2})


def naive(original: pd.DataFrame, synthetic: pd.DataFrame, groups: list[str], marginals: list[tuple[str, ...]]) -> dict:
    """The definition, group by group with pandas: 1000 (1 − mean TVD within the group)."""
    out = {}
    for key, part in original.groupby(groups):
        key = key if isinstance(key, tuple) else (key,)
        mask = np.logical_and.reduce([synthetic[g] == v for g, v in zip(groups, key)])
        syn = synthetic[mask]
        tvds = []
        for cols in marginals:
            if len(syn) == 0:
                tvds.append(1.0)
                continue
            p = part.groupby(list(cols)).size() / len(part)
            q = syn.groupby(list(cols)).size() / len(syn)
            tvds.append(0.5 * p.sub(q, fill_value=0).abs().sum())
        out[key] = 1000 * (1 - np.mean(tvds))
    return out


def frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, n)
    a = (rng.random(n) < 0.3 + 0.2 * g).astype(int)
    return pd.DataFrame({"g": g, "a": a, "b": rng.integers(0, 3, n), "c": (rng.random(n) < 0.5).astype(int)})


def test_hand_values_two_groups():
    d = Domain.from_sizes({"g": 2, "a": 2})
    orig = pd.DataFrame({"g": [0, 0, 1, 1], "a": [0, 1, 0, 0]})
    syn = pd.DataFrame({"g": [0, 0, 1, 1], "a": [0, 0, 0, 1]})  # group 0: TVD 0.5; group 1: TVD 0.5
    got = grouped_kmarginal(orig, [syn], d, ["g"], k=1)
    assert got["score"] == pytest.approx(500.0) and got["groups_scored"] == 2
    same = grouped_kmarginal(orig, [orig], d, ["g"], k=1)
    assert same["score"] == 1000.0


@pytest.mark.parametrize("k", [1, 2, 3])
def test_agrees_with_the_definition_on_random_data(k):
    orig, syn = frame(3000, 1), frame(2000, 2)
    syn = syn[~((syn.g == 2) & (syn.a == 1))]  # a structural difference inside one group
    got = grouped_kmarginal(orig, [syn, frame(500, 3)], DOMAIN, ["g"], k=k)
    marginals = [tuple(m) for m in got["marginals"]]
    assert marginals == list(itertools.combinations(["a", "b", "c"], k))
    for s, table in enumerate([syn, frame(500, 3)]):
        expected = naive(orig, table, ["g"], marginals)
        assert got["group_scores"][s] == pytest.approx([expected[(v,)] for v in (0, 1, 2)], abs=1e-9)
    assert got["worst"][0]["group"] == {"g": "2"}  # the group where a = 1 was removed


def test_an_empty_group_scores_zero_and_extra_groups_are_counted_not_scored():
    orig = frame(600, 4)
    orig = orig[orig.g < 2]  # the original holds groups 0 and 1 only
    syn = frame(900, 5)
    syn_without_1 = syn[syn.g != 1]
    got = grouped_kmarginal(orig, [syn_without_1], DOMAIN, ["g"], k=2)
    assert got["groups_scored"] == 2
    by_group = {w["group"]["g"]: w for w in got["worst"]}
    assert by_group["1"]["score"] == 0.0 and by_group["1"]["rows_synthetic"] == [0]
    assert got["rows_outside"] == [int((syn_without_1.g == 2).sum())]


def test_two_group_columns_and_a_seeded_sample_of_marginals():
    d = Domain.from_sizes({"g": 2, "h": 2, "a": 2, "b": 2, "c": 2, "e": 2})
    rng = np.random.default_rng(0)
    orig = pd.DataFrame(rng.integers(0, 2, (800, 6)), columns=list("ghabce"))
    got = grouped_kmarginal(orig, [orig.sample(frac=1.0, random_state=1)], d, ["g", "h"], k=3, marginals=2, seed=7)
    assert got["available"] == 4 and len(got["marginals"]) == 2 and got["groups_scored"] == 4
    assert got["score"] == pytest.approx(1000.0)
    again = grouped_kmarginal(orig, [orig], d, ["g", "h"], k=3, marginals=2, seed=7)
    assert again["marginals"] == got["marginals"]


def test_errors():
    orig = frame(100, 6)
    with pytest.raises(DataError, match="'zz'"):
        grouped_kmarginal(orig, [orig], DOMAIN, ["zz"])
    with pytest.raises(DataError, match="too few"):
        grouped_kmarginal(orig[["g", "a"]], [orig[["g", "a"]]], DOMAIN, ["g"], k=2)
    with pytest.raises(DipsyError, match="k = 4"):
        grouped_kmarginal(orig, [orig], DOMAIN, ["g"], k=4)


def test_evaluate_and_the_report_show_the_worst_groups(tmp_path, capsys):
    import dipsy
    from dipsy.cli import main

    orig = frame(2000, 8)
    orig.to_csv(tmp_path / "orig.csv", index=False)
    release = dipsy.synthesize(orig, DOMAIN, method="privsyn", rho=1.0, seed=3, options={"iterations": 3})
    release.save(tmp_path / "rel")
    code = main(
        [
            "evaluate",
            str(tmp_path / "orig.csv"),
            str(tmp_path / "rel"),
            "--groups",
            "g",
            "--group-k",
            "2",
            "--report",
            str(tmp_path / "r.html"),
            "--json",
            str(tmp_path / "m.json"),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0 and "2-way score inside 3 groups of g" in printed
    assert "SDNist's k-marginal score (pairs with g)" in printed and "all-pairs score (dipsy's)" in printed
    html = (tmp_path / "r.html").read_text()
    assert "Inside each group" in html and "worst groups" in html and "g = " in html
    assert "SDNist&#x27;s k-marginal score" in html or "SDNist's k-marginal score" in html
    import json

    marginals = json.loads((tmp_path / "m.json").read_text())["marginals"]
    by_group = marginals["by_group"]
    assert by_group["groups_scored"] == 3 and len(by_group["worst"]) == 3 and 0 < by_group["score"] <= 1000
    sdnist = marginals["sdnist"]  # SDNist's score: pairs of the other columns jointly with g, per group beside 40 %
    assert sdnist["groups"] == ["g"] and sdnist["by_group"]["groups_scored"] == 3 and 0 < sdnist["score"] <= 1000
    assert all(0 <= w["baseline"] <= 1000 for w in sdnist["by_group"]["worst_groups"])
