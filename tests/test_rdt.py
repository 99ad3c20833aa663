"""Random decision trees (``rdt``): structure from public inputs only, leaf noise of the stated scale
(with power), the ensemble's budget arithmetic, sequential synthesis, the variants and bad input."""

from __future__ import annotations

import dataclasses
import json
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from test_samplers import ACCEPT, REJECT, chi_square_p

import dipsy
from dipsy.cli import main
from dipsy.domain import Column, Domain
from dipsy.engine import NumpyEngine
from dipsy.errors import DipsyError
from dipsy.methods.rdt import RandomDecisionTrees
from dipsy.methods.rdt import synthesizer as rdt_module
from dipsy.methods.rdt.trees import leaf_distributions
from dipsy.privacy import PureDP
from dipsy.privacy.measurement import DeclaredPublic
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_laplace_pmf
from dipsy.privacy.session import Session

#: The public columns a, b, h are declared public: rdt releases them as they are with its own targets.
DOMAIN = Domain(
    (
        Column("a", "categorical", categories=tuple(range(6)), role="public"),
        Column("b", "categorical", categories=tuple(range(4)), role="public"),
        Column("h", "integer", lower=0, upper=99, bins=(0, 20, 40, 60, 80, 99), role="public"),
        Column("sex", "categorical", categories=("F", "M")),
        Column("race", "categorical", categories=("r1", "r2", "r3")),
    )
)


def records(n: int, seed: int) -> pd.DataFrame:
    """Sex depends on a; race on sex."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, n)
    sex = np.where(rng.random(n) < np.where(a < 3, 0.9, 0.1), "F", "M")
    race = np.where(sex == "F", "r1", np.where(rng.random(n) < 0.5, "r2", "r3"))
    return pd.DataFrame({"a": a, "b": rng.integers(0, 4, n), "h": rng.integers(0, 100, n), "sex": sex, "race": race})


@pytest.fixture
def files(tmp_path):
    structure = tmp_path / "structure.csv"
    records(3000, 1).to_csv(structure, index=False)
    return tmp_path, structure


def options(structure, **more):
    return {
        "sensitive": "sex,race",
        "structure": str(structure),
        "n_b": 200,
        "leaf_min": 20,
        "trees": 3,
        "structure_seed": 7,
        **more,
    }


def planned(data: pd.DataFrame, structure, epsilon=1.0, neighbouring=None, sets=1, **more):
    synth = RandomDecisionTrees(PureDP(epsilon), sets, options(structure, **more), neighbouring)
    n = len(data) if synth.relation.fixes_n else None
    return synth, synth.plan(n, DOMAIN)


def trees_of(plan):
    return [m.query.tree for m in plan.measurements if not isinstance(m.mechanism, DeclaredPublic)]


# -- structure ----------------------------------------------------------------------------------


def test_the_structure_never_reads_confidential_data(files, monkeypatch):
    """Two confidential tables that disagree in every public value (so every confidential split
    count differs) give identical trees through the whole release path; the grown trees are the
    structure file's."""
    _, structure = files
    one = records(1500, 2)
    other = one.copy()
    other["a"], other["b"], other["h"] = 5 - one["a"], 3 - one["b"], 99 - one["h"]
    assert (one[["a", "b", "h"]] != other[["a", "b", "h"]]).all().all()
    grown = []
    real = rdt_module.grow_public
    monkeypatch.setattr(rdt_module, "grow_public", lambda *a, **k: grown.append(real(*a, **k)) or grown[-1])
    releases = [
        dipsy.synthesize(d, DOMAIN, method="rdt", epsilon=1.0, seed=s, options=options(structure))
        for d, s in ((one, 1), (other, 2))
    ]
    first, second = grown[:6], grown[6:]
    assert len(first) == len(second) == 6  # 3 trees × 2 sensitive columns
    for x, y in zip(first, second):
        for f in ("attribute", "threshold", "first", "parent", "depth", "support"):
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
    assert releases[0].parameters["trees"] == releases[1].parameters["trees"]
    assert all(t["leaves"] > 3 for t in releases[0].parameters["trees"])  # the trees did split


def test_splits_follow_the_structure_counts_and_weights(files):
    _, structure = files
    _, plan = planned(records(100, 3), structure, weights="a:1000,b:0.001,h:0.001", structure_weight=1)
    for tree in trees_of(plan):
        assert tree.attributes[tree.attribute[0]] == "a"  # the heavy attribute is drawn first
        inner = tree.attribute >= 0
        assert (tree.support[inner] >= 200).all() and (tree.depth[inner] < 6).all()  # n_b and depth
        children = tree.parent[1:]
        np.testing.assert_allclose(
            np.bincount(children, weights=tree.support[1:], minlength=tree.nodes)[inner], tree.support[inner]
        )  # a split partitions its node's structure records


def test_the_structure_weight_defaults_to_n_over_the_structure_rows_and_stumps_are_named(tmp_path, caplog):
    """With the records' own targets n is public: a structure file of 100 rows stands for 3,000
    records (weight 30) and the trees split; given weight 1, every tree is a single leaf, and the
    release says that the sensitive columns are drawn independently of the others."""
    small = tmp_path / "small.csv"
    records(100, 1).to_csv(small, index=False)
    data = records(3000, 2)
    _, plan = planned(data, small)
    assert plan.parameters["structure_weight"] == 30 and plan.parameters["structure_weight_from"] == "n / structure rows"
    assert "warnings" not in plan.parameters and max(int(t.depth.max()) for t in trees_of(plan)) > 0
    _, plan = planned(data, small, structure_weight=1)
    assert all(len(t.leaves) == 1 for t in trees_of(plan))
    [warning] = plan.parameters["warnings"]
    assert warning.startswith("every tree of sex, race is a single leaf") and "n_b = 200" in warning
    assert warning in caplog.text


def test_collapsing_is_decided_on_structure_counts(files):
    tmp, structure = files
    skewed = records(3000, 1)
    skewed.loc[skewed["a"] >= 4, "a"] = 0  # categories 4 and 5 are absent from the structure file
    skewed.to_csv(tmp / "skewed.csv", index=False)
    synth, plan = planned(records(100, 3), tmp / "skewed.csv", collapse="a:10", coarsen="h:2")
    a = plan.parameters["groupings"]["sex"]["a"]
    assert a[4] == a[5] and len(set(a)) == 5  # the two rare categories pooled into one child
    assert plan.parameters["groupings"]["sex"]["h"] == [0, 0, 1, 1, 2]


# -- the leaves' noise ------------------------------------------------------------------------------


@pytest.mark.parametrize("relation, sensitivity", [("substitute", 2), ("add-remove", 1)])
def test_leaf_noise_is_discrete_laplace_of_the_stated_scale(files, relation, sensitivity):
    """Every (leaf, label) cell's noise, read as released minus exact, fits the discrete Laplace of
    scale Δ/ε_tree, and not ×0.7 or ×1.3 of it (chi-square, p-levels as in test_samplers)."""
    tmp, structure = files
    data = records(2000, 4)
    targets = tmp / "targets.csv"
    data[["a", "b", "h"]].to_csv(targets, index=False)
    draws = []
    for rep in range(12):
        synth, plan = planned(data, structure, epsilon=3.0, neighbouring=relation, targets=str(targets), n_b=20, leaf_min=0)
        engine = NumpyEngine(data, DOMAIN)
        session = Session(engine, plan.declared(PureDP(3.0)), plan.relation, Randomness.from_seed(rep), plan.measurements)
        *_, noisy = synth.measure(session, plan)  # race's queries read sex's released model (S-004 §2)
        draws += [out - m.query.answer(engine) for m, out in zip(plan.measurements, noisy)]
    draws = np.concatenate(draws)
    scale = Fraction(sensitivity) / (Fraction(3) / 6)
    assert plan.measurements[0].mechanism.scale == scale and draws.size > 20_000
    assert chi_square_p(draws, lambda x: discrete_laplace_pmf(x, scale)) > ACCEPT
    for wrong in (scale * Fraction(7, 10), scale * Fraction(13, 10)):
        assert chi_square_p(draws, lambda x, w=wrong: discrete_laplace_pmf(x, w)) < REJECT


def test_the_leaf_query_counts_each_record_once(files):
    _, structure = files
    data = records(777, 5)
    synth, plan = planned(data, structure)
    engine = NumpyEngine(data, DOMAIN)
    synth.measure(Session(engine, plan.declared(PureDP(1.0)), plan.relation, Randomness.from_seed(0), plan.measurements), plan)
    for m in plan.measurements[1:]:
        counts = m.query.answer(engine)
        assert counts.sum() == 777 and counts.size == len(m.query.tree.leaves) * DOMAIN[m.query.label].size


def test_post_processing_projects_and_falls_back_to_the_pooled_parent():
    from dipsy.methods.rdt.trees import grow_public, project

    structure = np.array([[0.0]] * 50 + [[1.0]] * 5)
    tree = grow_public(("a",), [2], [1.0], structure, 1.0, 10, 1, np.random.default_rng(0))
    # leaf 1 (5 structure records) is below leaf_min = 10: it takes the root's counts, the sums of
    # the leaves' raw noisy counts (6 − 0, −3 + 9); leaf 0's (6, −3) keep their total 3: (3, 0)
    p = leaf_distributions(tree, np.array([[6, -3], [0, 9]]), leaf_min=10)
    np.testing.assert_allclose(p, [[1.0, 0.0], [0.5, 0.5]])
    # a total within two noise sds of 0 is mostly noise: leaf 0 (total 3, sd 5 per cell) falls back too
    np.testing.assert_allclose(leaf_distributions(tree, np.array([[6, -3], [0, 9]]), leaf_min=10, sd=5.0), [[0.5, 0.5]] * 2)
    assert np.allclose(leaf_distributions(tree, np.array([[-1, -1], [-4, 0]]), 0), 0.5)  # nothing left: uniform
    # the projection keeps the noisy total and does not inflate a rare label as clamping would
    np.testing.assert_allclose(project(np.array([[100.0, -10.0, 5.0]])), [[95.0, 0.0, 0.0]])
    y = project(np.random.default_rng(1).normal(3, 5, (200, 4)))
    assert (y >= 0).all()
    np.testing.assert_allclose(y.sum(axis=1), np.maximum(np.random.default_rng(1).normal(3, 5, (200, 4)).sum(axis=1), 0))


# -- budget ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sets, trees, relation", [(1, 5, "substitute"), (2, 3, "add-remove"), (1, 10, "substitute")])
def test_the_ensemble_costs_e_times_epsilon_per_tree(files, sets, trees, relation):
    tmp, structure = files
    data = records(500, 6)
    more = {"trees": trees}
    if relation == "add-remove":
        data[["a", "b", "h"]].to_csv(tmp / "t.csv", index=False)
        more["targets"] = str(tmp / "t.csv")
    release = dipsy.synthesize(
        data, DOMAIN, method="rdt", epsilon=0.7, sets=sets, neighbouring=relation, options=options(structure, **more)
    )
    leaves = [m for m in release.statement.measurements if m["epsilon"] > 0]
    per_tree = Fraction(7, 10) / (sets * 2 * trees)
    assert len(leaves) == sets * 2 * trees
    assert all(m["noise"]["scale"] == str((1 if relation == "add-remove" else 2) / per_tree) for m in leaves)
    assert release.statement.total.epsilon == pytest.approx(0.7, rel=1e-12)
    assert release.parameters["epsilon_per_tree_exact"] == str(per_tree)
    assert f"ε = {sets * 2 * trees} · ε_tree" in release.statement.composition
    assert len(release.tables) == sets and all(len(t) == 500 for t in release.tables)
    declared = [m for m in release.statement.measurements if m["epsilon"] == 0]
    assert len(declared) == (1 if relation == "substitute" else 0)


def test_own_targets_are_declared_public_and_refuse_add_remove(files):
    _, structure = files
    data = records(300, 7)
    release = dipsy.synthesize(data, DOMAIN, method="rdt", epsilon=1.0, options=options(structure))
    public = " ".join(release.statement.public)
    assert "a, b, h of every record" in public and "protects the sensitive columns sex, race" in public
    assert release.statement.relation.kind == "substitute-values"
    assert release.statement.neighbouring.startswith("substitute one record's sensitive values")
    assert release.statement.relation.public == ("a", "b", "h")
    assert (
        "declared public, which the release repeats for every record as they are, are a, b, h" in release.statement.neighbouring
    )
    assert release.statement.to_dict()["relation"]["kind"] == "substitute-values"
    pd.testing.assert_frame_equal(release.tables[0][["a", "b", "h"]], data[["a", "b", "h"]], check_dtype=False)
    with pytest.raises(DipsyError, match="add/remove"):
        dipsy.synthesize(data, DOMAIN, method="rdt", epsilon=1.0, neighbouring="add-remove", options=options(structure))


def test_the_ledger_never_counts_own_targets_under_substitution(files, tmp_path):
    """A substitute-values spend counts under a substitute-values cap, never under substitute or
    add/remove caps; substitute spends count under its cap with k = 1."""
    from dipsy.errors import BudgetError
    from dipsy.privacy import Ledger

    _, structure = files
    data = records(300, 11)
    ledger = Ledger(tmp_path / "l.sqlite")
    dipsy.synthesize(
        data, DOMAIN, method="rdt", epsilon=1.0, options=options(structure), ledger=ledger, dataset_id="d", budget_cap=3.0
    )
    dipsy.synthesize(data, DOMAIN, method="laplace-sanitizer", epsilon=1.0, ledger=ledger, dataset_id="d")  # substitute: k = 1
    assert ledger.cap_relation("d").kind == "substitute-values"
    with pytest.raises(BudgetError, match="cap"):
        dipsy.synthesize(data, DOMAIN, method="rdt", epsilon=1.5, options=options(structure), ledger=ledger, dataset_id="d")
    other = Ledger(tmp_path / "m.sqlite")
    dipsy.synthesize(data, DOMAIN, method="laplace-sanitizer", epsilon=1.0, ledger=other, dataset_id="e", budget_cap=5.0)
    with pytest.raises(BudgetError, match="shows the columns it declares public"):
        dipsy.synthesize(data, DOMAIN, method="rdt", epsilon=1.0, options=options(structure), ledger=other, dataset_id="e")


# -- synthesis ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("combine", ["average", "random-tree"])
@pytest.mark.parametrize("condition_on", ["synthetic", "confidential"])
def test_at_a_large_budget_the_labels_follow_the_public_columns(files, combine, condition_on):
    """Sex depends on a (0.9 vs 0.1 female); race is r1 exactly for the women. The targets' race
    trees split on their synthetic sex. With S-004 §2's leaf counts (condition_on=synthetic) the
    confidential records are routed by a synthetic sex drawn from a alone, so race follows a but
    not sex beyond a: race = r1 agrees with sex = F for 0.9² + 0.1² = 0.82 of the records; counted
    on the confidential sex, for all of them."""
    _, structure = files
    data = records(6000, 8)
    out = dipsy.synthesize(
        data,
        DOMAIN,
        method="rdt",
        epsilon=600.0,
        seed=3,
        options=options(structure, combine=combine, weights="a:50,sex:50", condition_on=condition_on),
    ).tables[0]
    female = (out["sex"] == "F").groupby(out["a"]).mean()
    assert (female[[0, 1, 2]] > 0.8).all() and (female[[3, 4, 5]] < 0.2).all()
    r1 = (out["race"] == "r1").groupby(out["a"]).mean()
    assert (r1[[0, 1, 2]] > 0.8).all() and (r1[[3, 4, 5]] < 0.2).all()
    agree = ((out["race"] == "r1") == (out["sex"] == "F")).mean()
    if condition_on == "confidential":
        assert agree > 0.95
    else:
        assert abs(agree - 0.82) < 0.03


def race_queries(data: pd.DataFrame, structure, seed: int = 0, **more) -> list:
    """The race trees' leaf queries, once the sex trees of ``data`` are released (the earlier model
    the lemma of rdt.sequential conditions on); ``seed`` gives the key of the draws."""
    synth, plan = planned(data, structure, **more)
    if synth.earlier is not None:
        synth.earlier.key = rdt_module.draw_key(seed)
    engine = NumpyEngine(data, DOMAIN)
    synth.measure(Session(engine, plan.declared(PureDP(1.0)), plan.relation, Randomness.from_seed(1), plan.measurements), plan)
    return [m.query for m in plan.measurements if getattr(m.query, "label", "") == "race"]


def answers(queries: list, data: pd.DataFrame) -> np.ndarray:
    engine = NumpyEngine(data, DOMAIN)
    return np.concatenate([q.answer(engine) for q in queries])


def test_race_leaves_never_read_the_confidential_sex_and_keep_the_sensitivity(files):
    """S-004 §2: the race leaves route records by a synthetic sex. The lemma of rdt.sequential, the
    sex model fixed: changing one record's confidential sex changes no race count; changing its race
    moves two in each tree (the substitution Δ); the answer does not depend on the row order. Counted on
    the confidential sex, changing a sex moves counts."""
    _, structure = files
    data = records(2000, 12)
    queries = race_queries(data, structure)
    base = answers(queries, data)
    assert base.sum() == 3 * 2000  # every record counted once in each of the 3 trees
    moved = data.copy()
    moved.loc[data.index[data["race"] == "r1"], "sex"] = "M"  # every woman's confidential sex changed
    np.testing.assert_array_equal(answers(queries, moved), base)
    confidential = race_queries(data, structure, condition_on="confidential")
    assert not np.array_equal(answers(confidential, moved), answers(confidential, data))
    for i in range(0, 2000, 97):
        other = data.copy()
        other.loc[i, "race"] = "r2" if data.loc[i, "race"] != "r2" else "r3"
        engine, before = NumpyEngine(other, DOMAIN), NumpyEngine(data, DOMAIN)
        for q in queries:  # one count down, another up, in each tree
            assert np.abs(q.answer(engine) - q.answer(before)).sum() == 2
    shuffled = data.sample(frac=1, random_state=3)
    np.testing.assert_array_equal(answers(queries, shuffled.reset_index(drop=True)), base)


def test_the_sequential_race_query_has_add_remove_sensitivity_one(files):
    """With targets=PATH under add/remove: adding a record (also one equal to a record already
    there) changes the race counts by exactly one, whatever the key."""
    tmp, structure = files
    data = records(1500, 13)
    data[["a", "b", "h"]].to_csv(tmp / "t.csv", index=False)
    for seed in range(3):
        queries = race_queries(data, structure, seed, neighbouring="add-remove", targets=str(tmp / "t.csv"))
        base = answers(queries, data)
        for extra in (data.iloc[[4]], data.iloc[[4]].assign(race="r3"), records(1, 99)):
            bigger = pd.concat([data.iloc[:700], extra, data.iloc[700:]], ignore_index=True)
            assert np.abs(answers(queries, bigger) - base).sum() == 3  # one in each of the 3 race trees


def test_the_random_structure_needs_no_file_and_splits_numbers_within_bounds():
    data = records(3000, 9)
    release = dipsy.synthesize(
        data,
        DOMAIN,
        method="rdt",
        epsilon=50.0,
        seed=4,
        options={"sensitive": "sex,race", "structure": "random", "depth": 3, "trees": 4, "structure_seed": 1},
    )
    synth = RandomDecisionTrees(
        PureDP(50.0), 1, {"sensitive": "sex,race", "structure": "random", "depth": 3, "structure_seed": 1}
    )
    for tree in trees_of(synth.plan(3000, DOMAIN)):
        assert tree.depth.max() == 3 and (tree.depth[tree.leaves] == 3).all()
        cuts = tree.threshold[~np.isnan(tree.threshold)]
        assert ((cuts > 0) & (cuts < 99)).all()
    assert release.parameters["structure"] == "random" and "n_b" not in release.parameters
    assert "Jagannathan" in release.statement.mechanism


def test_a_random_structure_splits_on_an_earlier_integer_sensitive_column_by_its_codes():
    domain = Domain(
        (
            Column("age", "integer", lower=0, upper=9, role="public"),
            Column("s", "integer", lower=0, upper=1),
            Column("r", "integer", lower=0, upper=2),
        )
    )
    rng = np.random.default_rng(5)
    s = rng.integers(0, 2, 4000)
    data = pd.DataFrame({"age": rng.integers(0, 10, 4000), "s": s, "r": np.where(s == 1, 2, rng.integers(0, 2, 4000))})
    out = dipsy.synthesize(
        data,
        domain,
        method="rdt",
        epsilon=500.0,
        seed=2,
        options={
            "sensitive": "s,r",
            "structure": "random",
            "depth": 2,
            "weights": "s:1000",
            "structure_seed": 3,
            "condition_on": "confidential",
        },
    ).tables[0]
    assert ((out["r"] == 2) == (out["s"] == 1)).mean() > 0.95  # r's trees split the targets on their synthetic s


def test_the_audit_case_reads_a_leaf_through_fifty_targets():
    from dipsy.audit import CASES

    case = CASES["rdt"]
    assert case.kwargs["neighbouring"] == "add-remove" and len(case.files["targets.csv"]) == 50


# -- roles and the tree summary -------------------------------------------------------------------------

#: Every column with the default role, sensitive: rdt may not repeat any of them.
UNDECLARED = Domain(tuple(dataclasses.replace(c, role="sensitive") for c in DOMAIN.columns))


def test_the_domains_roles_choose_the_columns_when_no_option_does(files):
    from dipsy.domain.columns import ROLE_READERS

    assert RandomDecisionTrees.name in ROLE_READERS  # what 'dipsy domain check' says about roles stays true
    _, structure = files
    opts = {k: v for k, v in options(structure).items() if k != "sensitive"}
    synth = RandomDecisionTrees(PureDP(1.0), 1, opts)
    roles = synth.roles(DOMAIN)
    assert roles.public == ("a", "b", "h") and roles.sensitive == ("sex", "race")
    with pytest.raises(DipsyError, match="which columns are sensitive"):  # no role declared public: the options must say
        RandomDecisionTrees(PureDP(1.0), 1, opts).roles(UNDECLARED)


@pytest.mark.parametrize(
    "domain, given, message",
    [
        (
            DOMAIN,
            {"sensitive": "sex"},
            "rdt would release the column 'race' of every record as it is, and the domain declares it sensitive",
        ),
        (
            DOMAIN,
            {"public": "a,b,h,race", "sensitive": "sex"},
            "release the column 'race' of every record as it is, and the domain declares it sensitive",
        ),
        (
            UNDECLARED,
            {"sensitive": "sex,race"},
            "release the column 'a' of every record as it is, and the domain declares it sensitive",
        ),
        (DOMAIN, {"public": "a,b"}, "the column 'h' is neither public nor sensitive"),
        (DOMAIN, {"sensitive": "sex,race,a"}, "'a' is named sensitive, and the domain declares it public"),
    ],
)
def test_a_column_declared_sensitive_is_never_released_as_it_is(files, domain, given, message):
    """Roles are the contract: with its own targets, rdt repeats its public columns, and each must
    be declared public — whether or not the domain declares any column public (finding 2)."""
    _, structure = files
    opts = {**{k: v for k, v in options(structure).items() if k != "sensitive"}, **given}
    synth = RandomDecisionTrees(PureDP(1.0), 1, opts)
    with pytest.raises(DipsyError, match=re.escape(message)):
        synth.check_roles(domain)  # from public inputs: before anything is read
    targets = {**opts, "targets": str(structure)}  # a public file's records to label: nothing is repeated
    if "sensitive" in given and given["sensitive"] != "sex,race,a":
        synth = RandomDecisionTrees(PureDP(1.0), 1, targets)
        synth.check_roles(domain, synth.plan(100, domain))


def test_the_tree_summary_holds_the_public_structure_and_no_true_count(files):
    """The summary's structure is the same for two confidential tables that share nothing but
    their size; only the post-processed count of leaves that kept their own distribution differs."""
    _, structure = files
    one = records(1500, 2)
    other = records(1500, 12)
    other["sex"] = np.where(other["sex"] == "F", "M", "F")
    summaries = [
        dipsy.synthesize(d, DOMAIN, method="rdt", epsilon=2.0, sets=2, seed=s, options=options(structure)).parameters
        for d, s in ((one, 1), (other, 2))
    ]
    first, second = (p["tree_summary"] for p in summaries)
    assert list(first) == ["sex", "race"]
    for label in first:
        own = [first[label].pop("leaves_with_own_distribution"), second[label].pop("leaves_with_own_distribution")]
        assert first[label] == second[label]  # the structure: public inputs and the public seed only
        assert all(0 <= k <= n for o in own for k, n in zip(o, first[label]["leaves_per_tree"]))
    sex = first["sex"]
    assert (
        sex["trees"] == 6
        and sex["split_attributes"] == ["a", "b", "h"]
        and first["race"]["split_attributes"] == ["a", "b", "h", "sex"]
    )
    per_tree = summaries[0]["trees"]  # the plan's facts per tree, in plan order: set, then sensitive column, then tree
    sex_trees = [per_tree[(k * 2 + 0) * 3 + t] for k in range(2) for t in range(3)]
    assert sex["leaves_per_tree"] == [t["leaves"] for t in sex_trees] and sex["depth_per_tree"] == [t["depth"] for t in sex_trees]
    assert sum(sex["splits"].values()) == sum(t["nodes"] - t["leaves"] for t in sex_trees) > 0  # one split per inner node
    json.dumps(summaries[0]["tree_summary"])  # release.json can hold it


# -- bad input ----------------------------------------------------------------------------------------


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


@pytest.fixture
def cli(files, tmp_path):
    tmp, structure = files
    data, domain = tmp / "data.csv", tmp / "domain.json"
    records(400, 10).to_csv(data, index=False)
    domain.write_text(json.dumps(DOMAIN.to_dict()))
    return tmp, data, domain, structure


BAD = [
    ("sensitive also public", ["sensitive=sex", "public=a,b,h,sex"], "named both sensitive and public"),
    ("a column left out", ["public=a,b"], "the column 'h' is neither public nor sensitive"),
    ("n_b 0", ["sensitive=sex,race", "n_b=0"], "n_b must be a whole number >= 1"),
    ("n_b negative", ["sensitive=sex,race", "n_b=-5"], "n_b must be a whole number >= 1"),
    ("no structure", ["sensitive=sex,race", "structure="], "structure file"),
    ("unknown column", ["sensitive=sex,colour"], "'colour'"),
    ("bad weights", ["sensitive=sex,race", "weights=a"], "column:number"),
    ("collapse with random", ["sensitive=sex,race", "structure=random", "collapse=a:10"], "structure=random"),
]


@pytest.mark.parametrize("name, given, message", BAD, ids=[b[0] for b in BAD])
def test_bad_options_are_refused_with_nothing_written(cli, capsys, name, given, message):
    tmp, data, domain, structure = cli
    opts = [f"structure={structure}"] + given if not any(g.startswith("structure=") for g in given) else given
    args = [
        "synth",
        data,
        "--domain",
        domain,
        "--method",
        "rdt",
        "--epsilon",
        "1",
        "--out",
        tmp / "rel",
        "--ledger",
        tmp / "ledger.sqlite",
    ]
    for o in opts:
        args += ["--option", o]
    code, err = run(capsys, *args)
    assert code != 0 and message in err, err
    assert not (tmp / "rel").exists() and not (tmp / "ledger.sqlite").exists()


@pytest.mark.parametrize(
    "targets, message",
    [
        (pd.DataFrame({"a": [0, 1], "b": [0, 1]}), "'h'"),  # a column of the domain is missing
        (pd.DataFrame({"a": [0, 9], "b": [0, 1], "h": [5, 50]}), "outside the domain"),  # category 9 of a is not in it
    ],
)
def test_a_target_file_that_does_not_match_the_domain_is_refused(cli, capsys, targets, message):
    tmp, data, domain, structure = cli
    targets.to_csv(tmp / "targets.csv", index=False)
    code, err = run(
        capsys,
        "synth",
        data,
        "--domain",
        domain,
        "--method",
        "rdt",
        "--epsilon",
        "1",
        "--out",
        tmp / "rel",
        "--ledger",
        tmp / "ledger.sqlite",
        "--option",
        "sensitive=sex,race",
        "--option",
        f"structure={structure}",
        "--option",
        f"targets={tmp / 'targets.csv'}",
        "--neighbouring",
        "add-remove",
    )
    assert code != 0 and message in err, err
    assert not (tmp / "rel").exists() and not (tmp / "ledger.sqlite").exists()


def test_a_good_cli_release_records_the_files_by_hash(cli, capsys):
    tmp, data, domain, structure = cli
    code, err = run(
        capsys,
        "synth",
        data,
        "--domain",
        domain,
        "--method",
        "rdt",
        "--epsilon",
        "1",
        "--out",
        tmp / "rel",
        "--ledger",
        tmp / "ledger.sqlite",
        "--option",
        "sensitive=sex,race",
        "--option",
        f"structure={structure}",
        "--option",
        "n_b=100",
    )
    assert code == 0, err
    meta = json.loads((tmp / "rel" / "release.json").read_text())
    assert meta["options"]["structure"]["file"] == "structure.csv" and len(meta["options"]["structure"]["sha256"]) == 64
    assert str(tmp) not in (tmp / "rel" / "release.json").read_text()
    assert meta["parameters"]["sensitive"] == ["sex", "race"]
