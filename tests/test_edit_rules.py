"""Edit rules and structural zeros (a domain's ``rules:``, :mod:`dipsy.domain.rules`).

Checked here: the syntax and every refusal (message and fix), the straddled-bin refusal, the
fingerprint of a domain without rules, the forbidden cells against an exact enumeration of small
domains, projection; enforcement on every method family that takes categorical columns (no
released record breaks a rule, a released table has its forbidden cells at zero, release.json and
the statement say so), its bounds (a tiny acceptance rate, columns released as they are); the
evaluation's counts on a file with known breaks; the ACS example's rules on both ACS files.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import dipsy
from dipsy.cli import main
from dipsy.domain import Domain
from dipsy.domain.rules import Condition
from dipsy.errors import DipsyError, DomainError
from dipsy.evaluation.rules import rule_breaks
from dipsy.methods.enforce import MAX_REDRAWS, Enforcement

ROOT = Path(__file__).resolve().parents[1]
ACS = ROOT / "examples" / "acs"
CE_DOMAIN = ROOT / "examples" / "ce" / "domain.yaml"

#: A small survey: age (binned), marital status (with a refusal code), housing type and tenure.
COLUMNS = {
    "AGE": {"kind": "integer", "lower": 0, "upper": 99, "bins": [0, 3, 15, 30, 60, 99], "role": "public"},
    "MSP": {"kind": "categorical", "categories": ["N", "1", "2"], "missing": {"codes": {-8: "refused"}}},
    "HT": {"kind": "categorical", "categories": ["1", "2"]},
    "OR": {"kind": "categorical", "categories": ["0", "1", "2"]},
}
RULES = [
    {"name": "no married child", "if": {"AGE": {"below": 15}}, "then": {"MSP": ["N"]}},
    {"name": "adults have a status", "if": {"AGE": {"at_least": 15}}, "then": {"MSP": {"not": ["N"]}}},
    {"name": "tenure", "allowed": {"columns": ["HT", "OR"], "combinations": [["1", "1"], ["1", "2"], ["2", "0"]]}},
]


def survey_domain(rules: list | None = None, **columns: dict) -> Domain:
    return Domain.from_dict({"name": "survey", "columns": {**COLUMNS, **columns}, "rules": RULES if rules is None else rules})


def survey_data(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Records that keep every rule of :data:`RULES`."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 100, n)
    msp = np.where(age < 15, "N", rng.choice(["1", "2"], n))
    msp = np.where((age >= 15) & (rng.random(n) < 0.05), "-8", msp)
    ht = rng.choice(["1", "2"], n, p=[0.8, 0.2])
    own = np.where(ht == "2", "0", rng.choice(["1", "2"], n))
    return pd.DataFrame({"AGE": age, "MSP": msp, "HT": ht, "OR": own})


def synth(*args, **kwargs):
    """A release that may be noisy (small ε on purpose: the model then puts records in forbidden cells)."""
    return dipsy.synthesize(*args, accept_noise=True, **kwargs)


def refused(spec: dict) -> DomainError:
    with pytest.raises(DomainError) as info:
        Domain.from_dict(spec)
    return info.value


# -- the syntax ----------------------------------------------------------------------------------


def test_rules_are_read_written_back_and_round_trip(tmp_path):
    d = survey_domain()
    assert [r.name for r in d.rules] == ["no married child", "adults have a status", "tenure"]
    assert d.rules[0].when == (("AGE", Condition(below=15)),) and d.rules[0].then == (("MSP", Condition(values=("N",))),)
    assert d.rules[1].then[0][1] == Condition(values=("N",), negated=True)
    assert d.rules[2].columns == ("HT", "OR") and d.rules[2].kind == "allowed"
    assert d.rules[2].text() == "(HT, OR) in {(1, 1), (1, 2), (2, 0)}"
    assert d.rules[0].text() == "if AGE < 15 then MSP in {N}"
    for name in ("d.yaml", "d.json"):
        d.save(tmp_path / name)
        back = Domain.load(tmp_path / name)
        assert back == d and back.sha256() == d.sha256()
    # `from` is at_least; one value stands for a list of it; a forbidden list; a missing code; null is the empty state
    other = Domain.from_dict(
        {
            "columns": {**COLUMNS, "W": {"kind": "integer", "lower": 0, "upper": 9, "missing": {"empty": "n/a"}}},
            "rules": [
                {"name": "a", "if": {"AGE": {"from": 60}}, "then": {"MSP": "1"}},
                {"name": "b", "forbidden": {"columns": ["AGE", "MSP"], "combinations": [[{"below": 3}, -8]]}},
                {"name": "c", "if": {"W": [None, 0]}, "then": {"HT": "1"}},
            ],
        }
    )
    assert other.rules[0].when[0][1] == Condition(at_least=60) and other.rules[0].to_dict()["if"] == {"AGE": {"at_least": 60}}
    assert other.rules[1].to_dict() == {
        "name": "b",
        "forbidden": {"columns": ["AGE", "MSP"], "combinations": [[{"below": 3}, -8]]},
    }
    assert Domain.from_dict(other.to_dict()) == other


def test_a_domain_without_rules_keeps_its_fingerprint():
    # The fingerprints dipsy gave these files before rules existed (a release records them).
    assert Domain.load(CE_DOMAIN).sha256() == "1ef5bcc405f037871bb533d13820dd8388bb86dc303ae24179477348070fe5d3"
    spec = {"columns": COLUMNS}
    plain = Domain.from_dict(spec).sha256()
    assert Domain.from_dict({**spec, "rules": []}).sha256() == plain
    assert Domain.from_dict({**spec, "rules": None}).sha256() == plain
    assert "rules" not in Domain.from_dict(spec).to_dict()
    assert survey_domain().sha256() != plain  # rules are part of the domain a release records
    assert survey_domain(RULES[:1]).sha256() != survey_domain(RULES[:2]).sha256()


REFUSALS = [
    # (a rule, words of the problem, words of the fix)
    (
        {"name": "x", "if": {"AGE": {"below": 15}}, "then": {"MARITAL": ["N"]}},
        "'MARITAL', which the domain does not list",
        "name columns of the domain",
    ),
    (
        {"name": "x", "if": {"AGE": {"below": 15}}, "then": {"MSP": ["M"]}},
        "'M' is not a value of column 'MSP'",
        "use its categories as the domain lists them: N, 1, 2; or a declared missing code: -8",
    ),
    (
        {"name": "x", "if": {"MSP": {"below": 2}}, "then": {"HT": ["1"]}},
        "'MSP' is categorical, and an interval needs",
        "list the categories",
    ),
    (
        {"name": "x", "forbidden": {"columns": ["HT"], "combinations": [["1"], ["2"]]}},
        "forbids every combination of HT",
        "remove the rule",
    ),
    ({"name": "x", "if": {"AGE": {"below": 0}}, "then": {"MSP": ["N"]}}, "forbids no combination", "outside the bounds"),
    (
        {"name": "x", "if": {"AGE": [4]}, "then": {"MSP": ["N"]}},
        "4 is one value of column 'AGE', whose codes are bins",
        "write an interval on the bins' edges",
    ),
    (
        {"name": "x", "if": {"AGE": {"below": 15}}, "then": {"MSP": [None]}},
        "an empty value (null) is not a value of column 'MSP'",
        "-8",
    ),
    ({"name": "x", "if": {"AGE": {"below": 15}}, "then": {"MSP": [True]}}, "read by YAML as a boolean", "quote it"),
    (
        {"name": "x", "if": {"AGE": {"at_least": 20, "below": 10}}, "then": {"MSP": ["N"]}},
        "holds no value",
        "give at_least below",
    ),
    (
        {"name": "x", "if": {"AGE": {"at_least": 1, "from": 2}}, "then": {"MSP": ["N"]}},
        "both at_least and from",
        "give one of them",
    ),
    ({"name": "x", "if": {"AGE": {"above": 1}}, "then": {"MSP": ["N"]}}, "unknown key(s) 'above'", "{below: 15}"),
    ({"name": "x", "if": {"AGE": {"not": [1], "below": 2}}, "then": {"MSP": ["N"]}}, "'not:' stands alone", "{not: [...]}"),
    ({"name": "x", "then": {"MSP": ["N"]}}, "has then: without if:", "see 'Edit rules'"),
    (
        {"name": "x", "if": {"AGE": {"below": 15}}, "then": {"MSP": ["N"]}, "allowed": {}},
        "has both if and allowed",
        "see 'Edit rules'",
    ),
    ({"name": "x"}, "has none of if/then, allowed and forbidden", "see 'Edit rules'"),
    ({"if": {"AGE": {"below": 15}}, "then": {"MSP": ["N"]}}, "has no name", "give each rule a 'name:'"),
    (
        {"name": "x", "if": {"AGE": {"below": 15}}, "then": {"MSP": ["N"]}, "when": 1},
        "unknown field(s) ['when']",
        "use only name, if",
    ),
    (
        {"name": "x", "allowed": {"columns": ["HT", "OR"], "combinations": [["1"]]}},
        "combination 1 of allowed: is ['1'], not a list of 2",
        "one item per column",
    ),
    (
        {"name": "x", "allowed": {"columns": ["HT", "HT"], "combinations": [["1", "1"]]}},
        "lists a column twice",
        "each column once",
    ),
    ({"name": "x", "allowed": {"columns": ["HT"]}}, "needs exactly 'columns:' and 'combinations:'", "see 'Edit rules'"),
    ({"name": "x", "if": {}, "then": {"MSP": ["N"]}}, "is not a mapping of column to condition", "{AGEP: {below: 15}}"),
]


@pytest.mark.parametrize(("rule", "problem", "fix"), REFUSALS)
def test_rules_that_cannot_be_meant_are_refused_with_a_fix(rule, problem, fix):
    error = refused({"columns": COLUMNS, "rules": [rule]})
    assert problem in error.problem, error.problem
    assert fix in error.fix, error.fix


def test_an_interval_boundary_inside_a_bin_is_refused_with_the_split_bins():
    error = refused({"columns": COLUMNS, "rules": [{"name": "no school", "if": {"AGE": {"below": 5}}, "then": {"MSP": ["N"]}}]})
    assert "rule 'no school'" in error.problem and "falls inside AGE's bin 3–14" in error.problem, error.problem
    assert error.fix == "split the bin at 5: bins [0, 3, 5, 15, 30, 60, 99]"
    # a numeric column: [e_k, e_k+1); a boundary on an edge is fine, inside a bin it is refused
    income = {"kind": "numeric", "lower": 0, "upper": 100, "bins": [0, 10, 50, 100]}
    ok = Domain.from_dict(
        {"columns": {**COLUMNS, "INC": income}, "rules": [{"name": "r", "if": {"INC": {"below": 10}}, "then": {"HT": "1"}}]}
    )
    assert ok.rule_cells[0].forbidden.tolist() == [[False, True], [False, False], [False, False]]
    error = refused(
        {"columns": {**COLUMNS, "INC": income}, "rules": [{"name": "r", "if": {"INC": {"at_least": 20}}, "then": {"HT": "1"}}]}
    )
    assert "bin [10, 50)" in error.problem and error.fix == "split the bin at 20: bins [0, 10, 20, 50, 100]"


def test_names_are_unique_and_rules_a_list():
    assert (
        "names rule(s) ['r'] twice"
        in refused({"columns": COLUMNS, "rules": [{**RULES[0], "name": "r"}, {**RULES[1], "name": "r"}]}).problem
    )
    assert "'rules:' is not a list" in refused({"columns": COLUMNS, "rules": {"name": "r"}}).problem
    error = refused(
        {
            "columns": {**COLUMNS, "X": {"kind": "numeric", "lower": 0, "upper": 1}},
            "rules": [{"name": "r", "if": {"X": {"below": 1}}, "then": {"HT": "1"}}],
        }
    )
    assert "numeric without bins" in error.problem and "bins:" in error.fix


def test_a_yaml_file_with_rules_loads_and_a_bad_one_names_the_rule(tmp_path):
    text = yaml.safe_dump({"columns": COLUMNS}, sort_keys=False) + (
        "rules:\n  - name: no married child\n    if: {AGE: {below: 15}}\n    then: {MSP: [N]}\n"
    )
    (tmp_path / "d.yaml").write_text(text)
    assert Domain.load(tmp_path / "d.yaml").rules[0].then[0][1].values == ("N",)
    (tmp_path / "bad.yaml").write_text(text.replace("below: 15", "below: 16"))
    with pytest.raises(DomainError, match="rule 'no married child', if AGE: the boundary 16"):
        Domain.load(tmp_path / "bad.yaml")


# -- the forbidden cells, by enumeration -----------------------------------------------------------

#: Each code's meaning for the enumeration: AGE's bins as their least age, MSP's codes and its state.
AGE_LEAST = [0, 3, 15, 30, 60]
MSP_CODES = ["N", "1", "2", -8]


@pytest.mark.parametrize(
    ("rule", "forbids"),
    [
        (RULES[0], lambda age, msp, ht, own: age < 15 and msp != "N"),
        (RULES[1], lambda age, msp, ht, own: age >= 15 and msp == "N"),
        (RULES[2], lambda age, msp, ht, own: (ht, own) not in {("1", "1"), ("1", "2"), ("2", "0")}),
        (
            {
                "name": "r",
                "if": {"AGE": {"at_least": 3, "below": 30}, "HT": "2"},
                "then": {"MSP": [-8, "1"], "OR": {"not": ["1"]}},
            },
            lambda age, msp, ht, own: 3 <= age < 30 and ht == "2" and not (msp in (-8, "1") and own != "1"),
        ),
        (
            {
                "name": "r",
                "forbidden": {
                    "columns": ["MSP", "AGE"],
                    "combinations": [[{"not": ["N"]}, {"below": 3}], ["2", {"at_least": 60}]],
                },
            },
            lambda age, msp, ht, own: (msp != "N" and age < 3) or (msp == "2" and age >= 60),
        ),
    ],
)
def test_forbidden_cells_match_an_exact_enumeration(rule, forbids):
    cells = survey_domain([rule]).rule_cells[0]
    meaning = {"AGE": AGE_LEAST, "MSP": MSP_CODES, "HT": ["1", "2"], "OR": ["0", "1", "2"]}
    for codes in itertools.product(*(range(len(meaning[c])) for c in cells.columns)):
        record = {c: meaning[c][k] for c, k in zip(cells.columns, codes)}
        full = {
            "age": record.get("AGE", 0),
            "msp": record.get("MSP", "N"),
            "ht": record.get("HT", "1"),
            "own": record.get("OR", "1"),
        }
        assert bool(cells.forbidden[codes]) == forbids(**full), (record, cells.rule.text())


def test_an_integer_column_without_bins_has_a_code_per_value():
    d = Domain.from_dict(
        {
            "columns": {"A": {"kind": "integer", "lower": 10, "upper": 14}, "B": {"kind": "categorical", "categories": [0, 1]}},
            "rules": [
                {"name": "r", "if": {"A": {"below": 12.5}}, "then": {"B": [0]}},
                {"name": "s", "if": {"A": [13, "14"]}, "then": {"B": 1}},
            ],
        }
    )
    assert d.rule_cells[0].forbidden[:, 1].tolist() == [True, True, True, False, False]  # 10, 11, 12 < 12.5
    assert d.rule_cells[1].forbidden[:, 0].tolist() == [False, False, False, True, True]


def test_projection_keeps_the_rules_of_the_columns_kept():
    d = survey_domain()
    kept = d.project(["AGE", "MSP"])
    assert [r.name for r in kept.rules] == ["no married child", "adults have a status"]
    assert [(r.name, left) for r, left in d.dropped_rules(["AGE", "MSP", "HT"])] == [("tenure", ("OR",))]
    assert d.project(None) is d and d.dropped_rules(None) == ()


# -- enforcement on every method family ------------------------------------------------------------


def assert_none_broken(release, domain: Domain) -> dict:
    """No released record breaks a rule; the rules were enforced and release.json says what happened."""
    for table in release.tables:
        found = rule_breaks(table, [table], domain)
        assert found["any"]["original"] == 0, found
    meta = release.metadata()
    assert [r["name"] for r in meta["rules"]["enforced"]] == [r.name for r in domain.rules]
    line = next(
        t for t in meta["privacy"].get("transformations", meta["privacy"].get("if_unseeded", {}).get("transformations", []))
    )
    assert "post-processing" in line and "guarantee is unchanged" in line
    return meta["rules"]


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    folder = tmp_path_factory.mktemp("survey")
    survey_data().to_csv(folder / "data.csv", index=False)
    survey_data(seed=1).to_csv(folder / "public.csv", index=False)  # dpsyn's public data set
    survey_domain().save(folder / "domain.yaml")
    return folder


@pytest.mark.parametrize(
    ("method", "budget", "options"),
    [
        ("dirichlet-multinomial", {"epsilon": 1.0}, {}),
        ("laplace-sanitizer", {"epsilon": 0.3}, {}),
        ("perturbed-histogram", {"epsilon": 0.3}, {}),
        ("privsyn", {"epsilon": 0.3, "delta": 1e-6}, {"iterations": 10}),
        ("mst", {"epsilon": 0.3, "delta": 1e-6}, {}),
        ("rdt", {"epsilon": 0.5}, {"structure": "random", "sensitive": "MSP,HT,OR", "trees": 2}),
        ("dpsyn", {"epsilon": 0.5, "delta": 1e-6}, {"groups": "HT", "iterations": 5, "pool": 500}),
    ],
)
def test_no_released_record_breaks_a_rule(survey, method, budget, options):
    domain = Domain.load(survey / "domain.yaml")
    options = options | ({"public": str(survey / "public.csv")} if method == "dpsyn" else {})
    release = synth(survey / "data.csv", domain, method, seed=5, options=options, **budget)
    enforced = assert_none_broken(release, domain)
    records = enforced["records"]
    if method == "mst":  # its tree holds both rules' pairs, whose forbidden cells it holds at 0: nothing to redraw
        edges = {frozenset(e) for e in release.metadata()["parameters"]["tree_edges"]}
        assert {frozenset(("AGE", "MSP")), frozenset(("HT", "OR"))} <= edges and records["acceptance_rate"] == 1.0, records
        return
    # the model did put records in forbidden cells (else this test could not fail), and they were redrawn
    assert records["allowed"] < records["examined"] and sum(records["fresh_draws_per_set"]) >= 1, records
    assert 0 < records["acceptance_rate"] < 1
    assert sum(records["broken_per_rule"].values()) >= records["examined"] - records["allowed"]
    if method == "rdt":  # rows stand for the records: their public column is released as it is, in place
        data = pd.read_csv(survey / "data.csv")
        assert release.tables[0]["AGE"].tolist() == data["AGE"].tolist()
    if method == "dpsyn":  # each group keeps its noisy size: a rejected record is replaced from its own group
        sizes = release.metadata()["parameters"]["group_sizes"]
        assert release.tables[0]["HT"].astype(str).value_counts().reindex(["1", "2"]).tolist() == sizes


def test_the_rules_of_columns_not_released_are_named_not_enforced(survey):
    release = synth(
        survey / "data.csv", survey / "domain.yaml", "dirichlet-multinomial", epsilon=1.0, seed=1, columns=["AGE", "MSP", "HT"]
    )
    rules = release.metadata()["rules"]
    assert [r["name"] for r in rules["enforced"]] == ["no married child", "adults have a status"]
    assert rules["not_enforced"] == [
        {
            "name": "tenure",
            "rule": "(HT, OR) in {(1, 1), (1, 2), (2, 0)}",
            "why": "its column(s) OR are not released, so the release neither keeps nor breaks it",
        }
    ]
    none = synth(survey / "data.csv", survey / "domain.yaml", "dirichlet-multinomial", epsilon=1.0, seed=1, columns=["HT"])
    assert [r["name"] for r in none.metadata()["rules"]["not_enforced"]] == ["no married child", "adults have a status", "tenure"]
    assert "transformations" not in none.metadata()["privacy"]["if_unseeded"]


def test_a_released_table_has_its_forbidden_cells_at_zero(survey, tmp_path):
    domain = Domain.load(survey / "domain.yaml")
    release = synth(survey / "data.csv", domain, "dirichlet-multinomial", epsilon=1.0, seed=2, release="table")
    table = release.tables[0]
    mask = np.zeros(domain.shape(), dtype=bool)
    for cells in domain.rule_cells:
        mask |= np.broadcast_to(cells.mask(domain.names), domain.shape())
    counts = table["count"].to_numpy().reshape(domain.shape())
    assert mask.any() and (counts[mask] == 0).all() and counts[~mask].sum() > 0
    rules = release.metadata()["rules"]
    assert rules["table"]["forbidden_cells"] == int(mask.sum())
    assert rules["table"]["count_set_to_zero_per_set"][0] > 0  # the posterior predictive puts records there
    assert "set to 0 in the released table" in rules["how"]
    release.save(tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "release.json").read_text())
    assert saved["rules"]["table"]["forbidden_cells"] == int(mask.sum())
    assert any(
        "forbidden cells of the released table set to 0" in line for line in saved["privacy"]["if_unseeded"]["transformations"]
    )


def test_a_streamed_release_holds_the_in_memory_records(survey, tmp_path):
    kwargs = {"epsilon": 0.3, "seed": 9}
    memory = synth(survey / "data.csv", survey / "domain.yaml", "laplace-sanitizer", **kwargs)
    synth(
        survey / "data.csv",
        survey / "domain.yaml",
        "laplace-sanitizer",
        stream=True,
        on_release=lambda r: r.save(tmp_path / "s"),
        **kwargs,
    )
    streamed = pd.concat(
        [pd.read_parquet(p) for p in sorted((tmp_path / "s" / "synthetic_1").glob("*.parquet"))], ignore_index=True
    )
    pd.testing.assert_frame_equal(streamed, memory.tables[0], check_dtype=False)
    assert json.loads((tmp_path / "s" / "release.json").read_text())["rules"]["records"]["examined"] > len(streamed)


# -- the bounds of enforcement ------------------------------------------------------------------------


def chunks_of(values: list, column: str = "HT"):
    return lambda: iter([{column: np.asarray(values)}])


def test_a_tiny_acceptance_rate_stops_with_the_rule_that_rejects_most():
    d = Domain.from_dict(
        {
            "columns": {"HT": COLUMNS["HT"]},
            "rules": [{"name": "no twos", "forbidden": {"columns": ["HT"], "combinations": [["2"]]}}],
        }
    )
    mostly_bad = [0] * 5 + [1] * 2000  # code 1 is "2": forbidden
    with pytest.raises(DipsyError) as info:
        list(Enforcement(d).records(chunks_of(mostly_bad), np.random.default_rng(0)))
    assert "only 0.25% of the 2,005 records drawn for set 1 meet the edit rules" in info.value.problem
    assert "the rule 'no twos' rejects most" in info.value.problem and "fix or remove it" in info.value.fix
    # never allowed in a small set: stopped after MAX_REDRAWS fresh draws, not a loop
    with pytest.raises(DipsyError, match=f"after {MAX_REDRAWS} fresh draws, 1 record"):
        list(Enforcement(d).records(chunks_of([1]), np.random.default_rng(0)))


def test_aligned_rows_are_redrawn_in_place_and_fixed_columns_refused():
    d = Domain.from_dict(
        {
            "columns": {"P": {"kind": "categorical", "categories": ["a", "b"]}, "HT": COLUMNS["HT"]},
            "rules": [{"name": "a is 1", "if": {"P": "a"}, "then": {"HT": "1"}}],
        }
    )
    rng = np.random.default_rng(1)

    def fresh():
        return iter([pd.DataFrame({"P": ["a", "b", "a", "b"], "HT": rng.choice(["1", "2"], 4)})])

    out = list(Enforcement(d).records(fresh, rng, within=None))[0]
    assert out["P"].tolist() == ["a", "b", "a", "b"] and out["HT"][out["P"] == "a"].eq("1").all()
    fixed = Domain.from_dict(
        {
            "columns": {"P": {"kind": "categorical", "categories": ["a", "b"]}},
            "rules": [{"name": "no b", "forbidden": {"columns": ["P"], "combinations": [["b"]]}}],
        }
    )
    with pytest.raises(DipsyError, match="releases as they are .declared public.: no redraw changes them"):
        list(Enforcement(fixed, fixed=("P",)).records(chunks_of([0, 1], "P"), rng, within=None))


def test_rows_of_a_group_stand_in_for_each_other_only():
    """``within`` (dpsyn's groups) keeps each group's rows; so does an if/then rule's condition: a
    rejected record is replaced by an allowed one with the same cells of the rule's ``if`` columns."""
    allowed = {"name": "b lives in 1", "allowed": {"columns": ["G", "HT"], "combinations": [["a", "1"], ["a", "2"], ["b", "1"]]}}
    conditional = {"name": "b lives in 1", "if": {"G": "b"}, "then": {"HT": "1"}}
    rng = np.random.default_rng(2)
    group = np.repeat([0, 1], [30, 70])

    def fresh():  # the groups in place; housing at random (code 1, "2", forbidden in group b)
        return iter([{"G": group.copy(), "HT": rng.integers(0, 2, 100)}])

    def domain(rule):
        return Domain.from_dict(
            {"columns": {"G": {"kind": "categorical", "categories": ["a", "b"]}, "HT": COLUMNS["HT"]}, "rules": [rule]}
        )

    for rule in (allowed, conditional):
        out = list(Enforcement(domain(rule)).records(fresh, rng, within=("G",)))[0]
        assert out["G"].tolist() == group.tolist() and (out["HT"][group == 1] == 0).all()
    pooled = list(Enforcement(domain(allowed)).records(fresh, rng, within=()))[0]
    assert np.bincount(pooled["G"], minlength=2)[1] < 70  # no group, no condition: group b loses records to group a
    kept = list(Enforcement(domain(conditional)).records(fresh, rng, within=()))[0]
    assert np.bincount(kept["G"], minlength=2).tolist() == [30, 70] and (kept["HT"][kept["G"] == 1] == 0).all()


def test_without_rules_nothing_changes(survey):
    plain = Domain.from_dict({"columns": COLUMNS})
    release = synth(survey / "data.csv", plain, "dirichlet-multinomial", epsilon=1.0, seed=3)
    assert "rules" not in release.metadata()
    assert not Enforcement(plain)


# -- the evaluation and the command line -------------------------------------------------------------


def test_evaluate_counts_the_breaks_of_each_rule(survey, tmp_path):
    data = survey_data(200, seed=4)
    data.loc[[0, 1, 2], ["AGE", "MSP"]] = [[5, "1"], [7, "2"], [8, "-8"]]  # three married children
    data.loc[[3], ["HT", "OR"]] = [["2", "1"]]  # an owned group quarters
    data.loc[[4], ["AGE", "MSP"]] = [[40, "N"]]  # an adult without a status
    data.to_csv(tmp_path / "broken.csv", index=False)
    release = synth(survey / "data.csv", survey / "domain.yaml", "dirichlet-multinomial", epsilon=1.0, seed=6, sets=2)
    release.save(tmp_path / "release")
    ev = dipsy.evaluate(tmp_path / "broken.csv", tmp_path / "release")
    counts = {r["name"]: (r["original"], r["synthetic"]) for r in ev["rules"]["rules"]}
    assert counts == {"no married child": (3, [0, 0]), "adults have a status": (1, [0, 0]), "tenure": (1, [0, 0])}
    assert ev["rules"]["any"]["original"] == 5 and math.isclose(ev["rules"]["any"]["original_share"], 5 / 200)
    from dipsy.evaluation.report import render

    # the page without the marginals' and numeric columns' figures (most of a render's time): the rules'
    # counts are a part of the marginals section drawn from ev["rules"] alone
    shown = {k: v for k, v in ev.items() if k not in ("marginals", "numeric")}
    html = render(shown, data, release.tables, release.domain)
    assert "<h3>Edit rules</h3>" in html and "if AGE &lt; 15 then MSP in {N}" in html and "3 (1.5%)" in html


def test_domain_check_lists_the_rules(survey, capsys):
    code = main(["domain", "check", str(survey / "data.csv"), "--domain", str(survey / "domain.yaml"), "--columns", "AGE,MSP,HT"])
    out = capsys.readouterr().out
    assert code == 0
    assert "rules: 2 edit rule(s)" in out and "rule 'no married child': if AGE < 15 then MSP in {N} (forbids 6 of the 20" in out
    assert "note: 1 rule(s) name columns not chosen (OR): a release of these columns does not enforce them ('tenure')" in out


# -- the ACS example --------------------------------------------------------------------------------


@pytest.mark.parametrize("year", [2018, 2019])
def test_the_acs_rules_hold_on_both_files(year):
    domain = Domain.load(ACS / "domain.yaml")
    data = pd.read_csv(ACS / f"national{year}.csv", dtype=str, keep_default_na=False)[list(domain.names)]
    found = rule_breaks(data, [data.head(1)], domain)
    assert len(found["rules"]) == 16 and found["any"]["original"] == 0, [r for r in found["rules"] if r["original"]]
    # and each rule can fail: a ten-year-old with a break of every kind
    child = data.iloc[[0]].assign(
        AGEP="10", MSP="1", PINCP_DECILE="3", PINCP="1000", INDP_CAT="4", DVET="1", HOUSING_TYPE="2", OWN_RENT="1", POVPIP="100"
    )
    adult = data.iloc[[0]].assign(AGEP="40", MSP="N", EDU="N", PINCP_DECILE="N", PINCP="N", DREM="N", DPHY="N")
    baby = data.iloc[[0]].assign(AGEP="1", EDU="3", DREM="1", DPHY="2", MSP="N", PINCP_DECILE="N", INDP_CAT="N", DVET="N")
    broken = rule_breaks(pd.concat([child, adult, baby]), [data.head(1)], domain)
    assert all(r["original"] >= 1 for r in broken["rules"]), [r["name"] for r in broken["rules"] if not r["original"]]


@pytest.fixture(scope="module")
def acs_small(tmp_path_factory):
    """The ACS excerpt's columns that the rules name most, with its income columns (integers with an 'N'
    state): 2019, and 2018 as dpsyn's public data set."""
    columns = ["AGEP", "MSP", "EDU", "PINCP_DECILE", "PINCP", "POVPIP", "HOUSING_TYPE", "OWN_RENT", "DREM"]
    folder = tmp_path_factory.mktemp("acs")
    for year in (2018, 2019):
        # Parquet of the CSV's text (string columns, 'N' among the incomes): the releases are the ones the CSV
        # files give, record for record, and DuckDB reads them without parsing 27,253 lines at each of a
        # release's queries (0.4 to 1.3 CPU seconds a release)
        frame = pd.read_csv(ACS / f"national{year}.csv", dtype=str, keep_default_na=False)
        frame[columns].to_parquet(folder / f"data{year}.parquet", index=False)
    return folder / "data2019.parquet", Domain.load(ACS / "domain.yaml").project(columns)


@pytest.mark.parametrize("method", ["privsyn", "mst", "dpsyn"])
def test_acs_releases_break_no_rule(acs_small, method):
    """The releases keep every rule, the income columns' 'N' included, which they synthesize as a state
    of its own: its share in the release is the original's (about 15 %: everyone under 15, and the
    institutional group quarters for POVPIP) within a few points."""
    data, domain = acs_small
    # 3,000 records from each method (dpsyn's whole file of 27,253 took 10 CPU seconds, mostly redrawing
    # rejected records): the shares below then have a sampling standard error of 0.7 points, their
    # tolerance is 3
    options = {"rows": 3000} | {
        "privsyn": {"iterations": 10},
        "mst": {},
        "dpsyn": {"public": str(data.with_name("data2018.parquet")), "pool": 2000, "iterations": 10},
    }[method]
    release = synth(data, domain, method, epsilon=1.0, delta=1e-9, seed=7, options=options)
    rules = assert_none_broken(release, domain)
    table = release.tables[0]
    assert rules["records"]["allowed"] < rules["records"]["examined"]
    assert method == "dpsyn" or len(table) == 3000
    original = pd.read_parquet(data)
    # rejected records are replaced by allowed ones of the same age: the under-15 share stays the
    # model's (replaced by any allowed record, mst's fell from 15.6 % to 10.6 % on the whole file)
    young = [(pd.to_numeric(t["AGEP"]) < 15).mean() for t in (original, table)]
    assert abs(young[1] - young[0]) < 0.03, young
    for column in ("PINCP", "POVPIP"):
        share = (table[column].astype(str) == "N").mean()
        assert abs(share - (original[column] == "N").mean()) < 0.03, (column, share)
        values = pd.to_numeric(table[column][table[column].astype(str) != "N"])
        assert values.between(domain[column].lower, domain[column].upper).all()


def test_the_estimation_holds_a_structural_zero_that_the_fit_alone_would_fill():
    """Private-PGM with the rules' forbidden cells as structural zeros: exactly 0 there, and the
    allowed cells still fitted to the measurements (without them the same fit puts mass there)."""
    from dipsy.methods.marginals.estimation import NoisyMarginal, estimate

    sizes = {"a": 3, "b": 2, "c": 2}
    ab = np.array([[30.0, 10.0], [20.0, 20.0], [5.0, 15.0]])  # the measured (a, b) puts 5 records in a = 2, b = 0
    measured = [NoisyMarginal(("a", "b"), ab, 1.0), NoisyMarginal(("b", "c"), np.array([[40.0, 15.0], [25.0, 20.0]]), 1.0)]
    forbidden = np.zeros((2, 3), dtype=bool)  # over (b, a): the rule's own order
    forbidden[0, 2] = True
    free = estimate(sizes, measured, iterations=150).project(("a", "b"))
    held = estimate(sizes, measured, iterations=150, zeros=[(("b", "a"), forbidden)])
    assert free[2, 0] > 4 and held.project(("a", "b"))[2, 0] == 0.0
    allowed = ~forbidden.T
    assert np.abs(held.project(("a", "b"))[allowed] - ab[allowed]).max() < 2.5  # the others stay near their counts
    assert held.project(("c",)).sum() == pytest.approx(held.total)
    draws = held.sample(20_000, dipsy.privacy.rng.Randomness.from_seed(0))
    assert not ((draws["a"] == 2) & (draws["b"] == 0)).any()


def test_aim_fits_the_rules_as_structural_zeros_and_draws_no_forbidden_record(survey):
    """AIM's model gives the rules' forbidden cells no mass, so enforcement rejects nothing."""
    domain = Domain.load(survey / "domain.yaml")
    release = synth(
        survey / "data.csv",
        domain,
        "aim",
        epsilon=0.3,
        delta=1e-6,
        seed=5,
        options={"rounds": 8, "workload": 2, "iterations": 100, "final_iterations": 300},
    )
    records = assert_none_broken(release, domain)["records"]
    assert records["allowed"] == records["examined"] and records["fresh_draws_per_set"] == [0], records
    assert release.metadata()["parameters"]["structural_zeros"] == [r.name for r in domain.rules]


def test_a_model_whose_every_cell_the_rules_forbid_is_refused():
    from dipsy.methods.marginals.estimation import from_potentials

    everything = np.ones((2, 2), dtype=bool)
    with pytest.raises(DipsyError, match="forbid every record"):
        from_potentials({"a": 2, "b": 2}, [(("a",), np.zeros(2))], 10.0, [(("a", "b"), everything)])
