"""S-004's utility outputs for synthetic sensitive columns (dipsy.evaluation.sensitive), their
report section and the --sensitive option of `dipsy evaluate`."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

import dipsy
from dipsy.cli import main
from dipsy.domain import Column, Domain
from dipsy.errors import DipsyError
from dipsy.evaluation import evaluate
from dipsy.evaluation.report import render
from dipsy.evaluation.sensitive import sensitive_utility

BINARY = Domain(
    (
        Column("p", "categorical", categories=(0, 1)),
        Column("s", "categorical", categories=(0, 1)),
    )
)


def pair(out, x, y):
    return next(q for q in out["indicators"]["pairs"] if q["x"] == x and q["y"] == y)


# -- hand-computed values ------------------------------------------------------------------------


def test_one_sensitive_column_by_hand():
    original = pd.DataFrame({"p": [0, 0, 1, 1], "s": [0, 0, 1, 1]})  # s follows p
    synthetic = pd.DataFrame({"p": [0, 0, 1, 1], "s": [0, 1, 1, 1]})
    out = sensitive_utility(original, [synthetic], BINARY, ["s"])
    assert out["sensitive"] == ["s"] and out["public"] == ["p"] and out["skipped"] == {}
    # cells (s, p) in C order (p fastest): original (0.5, 0, 0, 0.5), synthetic (0.25, 0, 0.25, 0.5)
    props = out["proportions"]
    assert props["tables"] == [["s", "p"]] and props["cells"] == [4]
    assert props["original"] == [0.5, 0.0, 0.0, 0.5]
    assert props["synthetic"] == [[0.25, 0.0, 0.25, 0.5]]
    # TVD = ½(|.5 − .25| + 0 + |0 − .25| + 0) = 0.25
    assert out["tables"] == [{"columns": ["s", "p"], "way": 2, "tvd": [0.25]}]
    assert out["tvd_mean"] == {"2-way": 0.25}
    # deviations from the mean .25: x (.25, −.25, −.25, .25), y (0, −.25, 0, .25):
    # r = .125 / sqrt(.25 · .125) = 1/√2
    assert props["r"] == [pytest.approx(1 / math.sqrt(2))]
    # slope of 1[p=1] on 1[s=1]: original P(p=1 | s=1) − P(p=1 | s=0) = 1 − 0; synthetic 2/3 − 0
    q = pair(out, "s=1", "p=1")
    assert q["slope_original"] == pytest.approx(1.0) and q["slope_synthetic"] == [pytest.approx(2 / 3)]
    # r = β₁ sqrt(P(X=1)(1 − P(X=1)) / (P(Y=1)(1 − P(Y=1)))): synthetic P(s=1) = 3/4, P(p=1) = 1/2
    assert q["corr_original"] == pytest.approx(1.0)
    assert q["corr_synthetic"] == [pytest.approx(2 / 3 * math.sqrt((3 / 16) / (1 / 4)))]
    # Both columns have two categories: each enters by one indicator (on a tie, the later
    # category), since s=0 and p=0 only mirror s=1 and p=1. With all four pairs the synthetic
    # slopes (±2/3 against ±1) would correlate perfectly, 1/3 off each: an artefact of the
    # mirrors. One pair leaves no correlation over pairs to take.
    ind = out["indicators"]
    assert ind["pairs_used"] == 1 and [(q["x"], q["y"]) for q in ind["pairs"]] == [("s=1", "p=1")]
    assert math.isnan(ind["slope_r"][0]) and ind["slope_mean_abs_diff"] == [pytest.approx(1 / 3)]


def test_the_tables_are_judged_against_a_resample_and_sensitive_columns_drawn_apart():
    # the original's s follows p: independence is 0.5 away (the product of the margins is ¼ in every cell)
    original = pd.DataFrame({"p": [0, 0, 1, 1] * 250, "s": [0, 0, 1, 1] * 250})
    resample = original.sample(frac=1.0, replace=True, random_state=1).reset_index(drop=True)
    apart = original.assign(s=np.random.default_rng(2).permutation(original["s"].to_numpy()))  # s drawn apart from p
    kept = sensitive_utility(original, [resample], BINARY, ["s"])
    y = kept["yardsticks"]
    assert y["independent"] == {"2-way": pytest.approx(0.5)} and 0 < y["floor"]["2-way"] < 0.05 and y["rows"] == 1000
    from dipsy.evaluation.verdicts import sensitive

    good, poor = sensitive(kept), sensitive(sensitive_utility(original, [apart], BINARY, ["s"]))
    assert good.level == "good" and f"{y['floor']['2-way']:.3g}" in good.text and "0.5 with the sensitive" in good.text
    assert poor.level == "poor" and "no closer than sensitive columns drawn apart" in poor.text, poor.text


TRIPLE = Domain(
    (
        Column("p", "categorical", categories=(0, 1)),
        Column("s", "categorical", categories=(0, 1)),
        Column("r", "categorical", categories=(0, 1)),
    )
)


def test_two_sensitive_columns_by_hand():
    original = pd.DataFrame({"p": [0, 0, 1, 1], "s": [0, 1, 0, 1], "r": [0, 1, 1, 1]})
    synthetic = pd.DataFrame({"p": [0, 0, 1, 1], "s": [0, 1, 0, 1], "r": [1, 1, 1, 0]})
    out = sensitive_utility(original, [synthetic], TRIPLE, ["s", "r"])
    tvd = {tuple(t["columns"]): t["tvd"][0] for t in out["tables"]}
    # s × p is unchanged; r × p: original (r,p) cells (¼, 0, ¼, ½), synthetic (0, ¼, ½, ¼) → TVD ½;
    # s × r: original (¼, ¼, 0, ½), synthetic (0, ½, ¼, ¼) → ½; s × r × p: two of four records move → ½
    assert tvd == {("s", "p"): 0.0, ("r", "p"): 0.5, ("s", "r"): 0.5, ("s", "r", "p"): 0.5}
    assert out["tables"][-1]["columns"] == ["s", "p"]  # worst first
    assert out["tvd_mean"] == {"2-way": pytest.approx(1 / 3), "3-way": 0.5}
    props = out["proportions"]
    assert props["tables"] == [["s", "p"], ["r", "p"], ["s", "r", "p"]] and props["cells"] == [4, 4, 8]
    # the 3-way cells, index s·4 + r·2 + p: original records (0,0,0) (1,1,0) (0,1,1) (1,1,1)
    assert props["original"][8:] == [0.25, 0, 0, 0.25, 0, 0, 0.25, 0.25]
    assert props["synthetic"][0][8:] == [0, 0, 0.25, 0.25, 0, 0.25, 0.25, 0]
    assert set(props["r_by_way"]) == {"2-way", "3-way"}
    # r enters by its rarer category, r = 0 (one record in four): original P(p=1 | r=0) −
    # P(p=1 | r=1) = 0 − 2/3; synthetic (r = 0 only in the last record, p = 1) 1 − 1/3
    q = pair(out, "r=0", "p=1")
    assert q["slope_original"] == pytest.approx(-2 / 3) and q["slope_synthetic"] == [pytest.approx(2 / 3)]
    # pairs: s with p and with r, r with p (one each: every column has two categories), the
    # sensitive indicator always x
    xs = {(q["x"].split("=")[0], q["y"].split("=")[0]) for q in out["indicators"]["pairs"]}
    assert xs == {("s", "p"), ("s", "r"), ("r", "p")} and out["indicators"]["pairs_used"] == 3


# -- agreement and the logistic model ------------------------------------------------------------


def records(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 4, n), rng.integers(0, 3, n)
    s = (rng.random(n) < np.where(a < 2, 0.7, 0.3)).astype(int)
    r = np.where(s == 1, rng.integers(0, 2, n), rng.integers(1, 3, n))
    return pd.DataFrame({"a": a, "b": b, "s": s, "r": r})


WIDE = Domain(
    (
        Column("a", "categorical", categories=(0, 1, 2, 3)),
        Column("b", "categorical", categories=(0, 1, 2)),
        Column("s", "categorical", categories=(0, 1)),
        Column("r", "categorical", categories=(0, 1, 2)),
    )
)


def test_an_exact_copy_agrees_everywhere():
    original = records(2000, 1)
    out = sensitive_utility(original, [original.copy(), original.copy()], WIDE, ["s", "r"])
    assert all(t["tvd"] == [0.0, 0.0] for t in out["tables"])
    assert out["proportions"]["r"] == [pytest.approx(1.0)] * 2
    assert out["indicators"]["slope_r"] == [pytest.approx(1.0)] * 2 and out["indicators"]["corr_r"] == [pytest.approx(1.0)] * 2
    assert {tuple(t["columns"]) for t in out["tables"]} == {
        ("s", "a"),
        ("s", "b"),
        ("r", "a"),
        ("r", "b"),
        ("s", "r"),
        ("s", "r", "a"),
        ("s", "r", "b"),
    }
    logit = out["logit"]["s"]
    rarer = str(original["s"].value_counts().index[-1])
    assert logit["response"] == f"s = {rarer}" and logit["level_rule"] == "the rarer of two categories"
    assert logit["formula"] == f"1[s = {rarer}] ~ C(a) + C(b)" and logit["rule"] == "reiter2003-partial"
    assert len(logit["coefficients"]) == 1 + 3 + 2
    for c in logit["coefficients"]:
        assert c["synthetic"]["estimate"] == pytest.approx(c["original"]["estimate"], rel=1e-9, abs=1e-12)
        assert c["ci_overlap"] == pytest.approx(1.0, abs=1e-6)
    assert logit["coefficient_r"] == pytest.approx(1.0)
    # three categories: the most common but one is modelled (the most common is the reference)
    second = str(original["r"].value_counts().index[1])
    assert out["logit"]["r"]["response"] == f"r = {second}" and "coefficients" in out["logit"]["r"]


def test_terms_name_the_columns_and_the_reference_is_the_most_common_level():
    original = records(3000, 5)
    out = sensitive_utility(original, [original], WIDE, ["s"], ["a", "b"], levels={"s": 1})
    logit = out["logit"]["s"]
    assert logit["response"] == "s = 1" and logit["level_rule"] == "named"
    ref = {p: str(original[p].value_counts().index[0]) for p in ("a", "b")}
    assert logit["reference"] == ref
    terms = [c["term"] for c in logit["coefficients"]]
    assert terms[0] == "Intercept"
    assert terms[1:] == [f"a[T.{v}]" for v in "0123" if v != ref["a"]] + [f"b[T.{v}]" for v in "012" if v != ref["b"]]
    with pytest.raises(DipsyError, match="not a category"):
        sensitive_utility(original, [original], WIDE, ["s"], ["a", "b"], levels={"s": "Female"})


def test_a_level_absent_from_a_synthetic_set_is_pooled_not_fatal():
    original = records(4000, 2)
    synthetic = original.copy()
    synthetic.loc[synthetic["a"] == 3, "a"] = 2  # a common level of a predictor disappears
    out = sensitive_utility(original, [original, synthetic], WIDE, ["s"], ["a", "b"])
    logit = out["logit"]["s"]
    assert logit["pooled_absent"] == {"a": ["3"]}
    # nothing else of a is pooled, so the pooled group (level 3) is empty in the second set:
    # it joins the least common level kept
    host = logit["merged"]["a"]
    least = original["a"][original["a"] != 3].value_counts().index[-1]
    assert host == f"{least}+other"
    terms = [c["term"] for c in logit["coefficients"]]
    assert not any(t.startswith("a[T.3") for t in terms) and f"a[T.{host}]" in terms and len(terms) == 1 + 2 + 2
    assert all(math.isfinite(c["synthetic"]["estimate"]) for c in logit["coefficients"])


RARE_DOMAIN = Domain((Column("a", "categorical", categories=(0, 1, 2, 3, 9)), Column("s", "categorical", categories=(0, 1))))


def test_a_rare_level_missing_from_a_set_joins_a_kept_level():
    rng = np.random.default_rng(3)
    n = 3000
    a = rng.integers(0, 4, n)
    a[:20] = 9  # under 1%: pooled as "other"
    s = (rng.random(n) < np.where(a < 2, 0.6, 0.35)).astype(int)
    original = pd.DataFrame({"a": a, "s": s})
    synthetic = original[original["a"] != 9].reset_index(drop=True)  # "other" empty in the set only
    out = sensitive_utility(original, [synthetic], RARE_DOMAIN, ["s"])
    logit = out["logit"]["s"]
    host = logit["merged"]["a"]
    assert host.endswith("+other") and logit["pooled"] == {"a": ["9"]}
    assert f"a[T.{host}]" in [c["term"] for c in logit["coefficients"]]
    assert out["tables"][0]["tvd"][0] > 0  # the tables still compare every level


def test_a_real_category_named_other_stays_apart_from_the_pooled_levels():
    """A predictor with a real level "other" and rare levels to pool: the pooled group gets a name
    of its own, and the model is fitted (pandas refused duplicate categories before)."""
    domain = Domain(
        (
            Column("job", "categorical", categories=("clerk", "farmer", "other", "rare1", "rare2")),
            Column("s", "categorical", categories=(0, 1)),
        )
    )
    rng = np.random.default_rng(8)
    n = 3000
    job = rng.choice(["clerk", "farmer", "other"], n)
    job[:10], job[10:20] = "rare1", "rare2"  # under 1 %: pooled
    s = (rng.random(n) < np.where(job == "other", 0.7, 0.3)).astype(int)
    original = pd.DataFrame({"job": job, "s": s})
    logit = sensitive_utility(original, [original.copy()], domain, ["s"])["logit"]["s"]
    assert "error" not in logit, logit.get("error")
    terms = [c["term"] for c in logit["coefficients"]]
    assert "job[T.other]" in terms and "job[T.(other)]" in terms and logit["pooled"] == {"job": ["rare1", "rare2"]}


def test_a_response_absent_from_a_set_is_reported_not_comparable():
    original = records(1000, 4)
    synthetic = original.assign(s=0)
    out = sensitive_utility(original, [synthetic], WIDE, ["s"], levels={"s": 1})
    assert out["logit"]["s"]["error"].startswith("no record of synthetic set 1 has s = 1")
    assert math.isnan(out["indicators"]["slope_r"][0])  # every synthetic slope on s is undefined
    assert out["proportions"]["r"][0] > 0


def test_binned_columns_are_read_by_their_bins_and_unbinned_numeric_ones_skipped():
    rng = np.random.default_rng(6)
    n = 2000
    frame = pd.DataFrame({"age": rng.integers(0, 100, n), "w": rng.random(n), "s": rng.integers(0, 2, n)})
    domain = Domain(
        (
            Column("age", "integer", lower=0, upper=99, bins=(0, 30, 60, 99)),
            Column("w", "numeric", lower=0, upper=1),
            Column("s", "categorical", categories=(0, 1)),
        )
    )
    out = sensitive_utility(frame, [frame], domain, ["s"])
    assert out["public"] == ["age"] and "w" in out["skipped"]
    assert out["proportions"]["cells"] == [2 * 3]
    assert {q["y"] for q in out["indicators"]["pairs"]} == {"age=0–29", "age=30–59", "age=60–99"}
    assert {c["term"] for c in out["logit"]["s"]["coefficients"]} >= {"Intercept"}


# -- release folders, the report and the command -------------------------------------------------


def release_folder(folder, synthetic: pd.DataFrame, domain: Domain, parameters: dict | None, method: str = "rdt"):
    """A release written by hand: release.json, domain.yaml, synthetic_1.csv."""
    folder.mkdir()
    synthetic.to_csv(folder / "synthetic_1.csv", index=False)
    domain.save(folder / "domain.yaml")
    privacy = {"definition": "none", "neighbouring": "-", "public": [], "mechanism": "by hand", "composition": "-", "sets": 1}
    meta = {"release": "records", "method": method, "sets": 1, "privacy": privacy, "combining_rule": "single"}
    if parameters is not None:
        meta["parameters"] = parameters
    (folder / "release.json").write_text(json.dumps(meta))
    return folder


def perturbed(original: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = original.copy()
    flip = rng.random(len(out)) < 0.15
    out.loc[flip, "s"] = 1 - out.loc[flip, "s"]
    return out


def section(page: str) -> str:
    return page[page.find('id="sensitive"') : page.find('id="inference"')]


def test_an_rdt_release_gets_the_section_and_others_say_not_applicable(tmp_path):
    data = records(3000, 3)
    folder = release_folder(tmp_path / "rdt", perturbed(data, 1), WIDE, {"sensitive": ["s", "r"], "public_columns": ["a", "b"]})
    ev = evaluate(data, folder)
    part = ev["sensitive"]
    assert part["sensitive"] == ["s", "r"] and part["public"] == ["a", "b"]
    assert 0.9 < part["proportions"]["r"][0] < 1 and "coefficients" in part["logit"]["s"]
    json.dumps(dipsy.evaluation.jsonable(ev), allow_nan=False)  # JSON-ready
    page = render(ev, data, [pd.read_csv(folder / "synthetic_1.csv")], WIDE)
    here = section(page)
    assert "Sensitive attributes" in here and "Not applicable" not in here
    # the proportions scatter, the slope/correlation scatters and one coefficient plot per model
    assert here.count("<img") == 4 and all(
        s.startswith("data:image/png;base64,") for s in re.findall(r'<img[^>]*src="([^"]+)"', here)
    )
    assert "Fig. 3b" in here and "Figs. 10–14" in here
    assert "sensitive × public proportions: r" in page  # the summary row

    plain = release_folder(tmp_path / "copy", data, WIDE, None, method="copy")
    ev = evaluate(data, plain)
    assert ev["sensitive"] is None
    here = section(render(ev, data, [data], WIDE))
    assert "Not applicable: the release names no sensitive columns" in here and "<img" not in here
    asked = evaluate(data, plain, sensitive=["s"])  # any release, sensitive columns named by the steward
    assert asked["sensitive"]["public"] == ["a", "b", "r"] and asked["sensitive"]["proportions"]["r"] == [pytest.approx(1.0)]
    with pytest.raises(DipsyError, match="'colour'"):
        evaluate(data, plain, sensitive=["colour"])


def test_the_evaluate_command_takes_sensitive_columns_and_levels(tmp_path, capsys):
    data = records(1500, 7)
    data.to_csv(tmp_path / "data.csv", index=False)
    folder = release_folder(tmp_path / "rel", perturbed(data, 2), WIDE, None, method="copy")
    code = main(["evaluate", str(tmp_path / "data.csv"), str(folder), "--sensitive", "s=1,r", "--json", str(tmp_path / "m.json")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "sensitive s, r × public" in out.out and "logistic model of s = 1:" in out.out
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["sensitive"]["logit"]["s"]["level"] == "1" and metrics["sensitive"]["public"] == ["a", "b"]


def test_a_real_rdt_release_is_recognised(tmp_path):
    data = records(2000, 3)
    records(2000, 4).to_csv(tmp_path / "structure.csv", index=False)
    public = Domain(tuple(dataclasses.replace(c, role="public") if c.name in ("a", "b") else c for c in WIDE.columns))
    release = dipsy.synthesize(
        data,
        public,
        method="rdt",
        epsilon=20.0,
        seed=1,
        options={"sensitive": "s,r", "structure": str(tmp_path / "structure.csv"), "n_b": 100, "leaf_min": 10},
    )
    part = evaluate(data, release)["sensitive"]
    assert part["sensitive"] == ["s", "r"] and part["public"] == ["a", "b"]
    assert part["proportions"]["r"][0] > 0.9  # ε = 20: the trees keep the joint shares
