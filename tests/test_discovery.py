"""Charged DP discovery of a domain (dipsy.methods.discovery, dipsy.discovery_run, dipsy.domain.discovered).

- The partition selection's privacy, exactly: on tiny neighbouring data sets every output set's
  probability is computed in closed form from the discrete Laplace pmf (the noise is discrete and
  independent per value), and the (ε, δ) inequality is checked for *every event* through the
  hockey-stick divergence Σ_S max(0, P[M(x) = S] − e^ε P[M(x') = S]) (its maximising event is the
  set of outputs where the left exceeds the right), under add/remove and substitution; a broken
  variant (threshold one lower, the cost unchanged) must fail the same check.
- The release probability of the real sampler, statistically, with its power stated and checked.
- Bins: every read happens inside a charged measurement, the edges are a function of the noisy
  table alone, and on a large sample of a known distribution they land near its quantiles.
- Engines: identical raw value counts, one record moving one count.
- The ledger, the domain's ``discovered`` block, the statement of later releases, the CLI.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

import dipsy
from dipsy.cli import main
from dipsy.domain import Column, Domain
from dipsy.domain.discovered import Discovery
from dipsy.engine import DuckDBEngine, NumpyEngine
from dipsy.engine.base import ValueCounts
from dipsy.errors import BudgetError, DipsyError, DomainError, PrivacyError
from dipsy.methods.discovery import PartitionSelection, grid_edges, plan_discovery, quantile_edges, tail, threshold
from dipsy.privacy import ApproxDP, Ledger
from dipsy.privacy.measurement import ACTIVE, DiscreteLaplace
from dipsy.privacy.relation import ADD_REMOVE, SUBSTITUTE
from dipsy.privacy.rng import Randomness
from dipsy.privacy.samplers import discrete_laplace_pmf

# -- the discrete Laplace tail and the threshold ---------------------------------------------------


def upper_tail(scale: Fraction, m: int) -> float:
    """P(Z >= m) summed from the pmf (not from the closed form under test); symmetric for m <= 0."""
    if m <= 0:
        return 1.0 - upper_tail(scale, 1 - m)
    z = np.arange(m, m + 4000)
    return float(np.sum(discrete_laplace_pmf(z, scale)))


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(1), Fraction(2), Fraction(7, 2)])
def test_the_closed_form_tail_is_the_pmf_summed(scale):
    for k in range(1, 25):
        summed = upper_tail(scale, k)
        if summed > 1e-280:
            assert tail(scale, k) == pytest.approx(summed, rel=1e-9)
            assert tail(scale, k) >= summed  # rounded up, never down


@pytest.mark.parametrize("scale, delta", [(Fraction(1), 0.25), (Fraction(2), 1e-6), (Fraction(1, 2), 1e-9), (Fraction(10), 1e-3)])
def test_the_threshold_is_the_least_that_keeps_a_single_record_below_delta(scale, delta):
    tau = threshold(scale, delta)
    assert upper_tail(scale, tau) <= delta  # P(1 + Z > τ) = P(Z >= τ)
    assert tau == 1 or upper_tail(scale, tau - 1) > delta


# -- the partition selection's (ε, δ), exactly --------------------------------------------------------


def release_probability(mech: PartitionSelection, count: int) -> float:
    """P(count + Z > τ): a value that does not occur is never released."""
    return 0.0 if count <= 0 else upper_tail(mech.scale, mech.threshold - count + 1)


def output_law(mech: PartitionSelection, counts: dict) -> dict:
    """P[M(x) = S] for every set S of values (independent releases, one per value)."""
    values = sorted(counts)
    p = {v: release_probability(mech, counts[v]) for v in values}
    law = {}
    for keep in product((False, True), repeat=len(values)):
        law[frozenset(v for v, k in zip(values, keep) if k)] = math.prod(p[v] if k else 1 - p[v] for v, k in zip(values, keep))
    return law


def hockey_stick(mech, x: dict, y: dict, epsilon: float) -> float:
    """max over events S of P[M(x) ∈ S] − e^ε P[M(y) ∈ S] (the least δ for this pair and ε)."""
    universe = set(x) | set(y)
    px = output_law(mech, {v: x.get(v, 0) for v in universe})
    py = output_law(mech, {v: y.get(v, 0) for v in universe})
    return sum(max(0.0, px[s] - math.exp(epsilon) * py[s]) for s in px)


def data_sets():
    """Tiny data sets over three values: counts around the threshold, and absent values."""
    for a, b, c in product(range(0, 6), range(0, 3), range(0, 2)):
        yield {"a": a, "b": b, "c": c}


def add_remove_pairs():
    for x in data_sets():
        for u in x:
            yield x, {**x, u: x[u] + 1}


def substitute_pairs():
    for x in data_sets():
        for u, w in product(x, x):
            if u != w and x[u] > 0:
                yield x, {**x, u: x[u] - 1, w: x[w] + 1}


def worst(mech, pairs, epsilon) -> float:
    return max(max(hockey_stick(mech, x, y, epsilon), hockey_stick(mech, y, x, epsilon)) for x, y in pairs)


@pytest.mark.parametrize("epsilon, delta", [(1, 0.05), (0.5, 0.02)])
def test_partition_selection_is_epsilon_delta_dp_under_add_remove_for_every_event(epsilon, delta):
    mech = PartitionSelection.for_budget(epsilon, delta, ADD_REMOVE)
    cost = mech.cost
    assert cost.epsilon == pytest.approx(epsilon) and cost.delta <= delta
    assert worst(mech, add_remove_pairs(), cost.epsilon) <= cost.delta + 1e-12
    # Both parts bind: a value present on both sides needs ε (δ = 0 is not enough at ε/2) ...
    assert worst(mech, [({"a": 3}, {"a": 4})], cost.epsilon / 2) > 0
    # ... and a value only the larger data set holds needs δ: released with probability P(Z >= τ).
    assert hockey_stick(mech, {"a": 1}, {}, 50.0) == pytest.approx(upper_tail(mech.scale, mech.threshold))


def test_a_threshold_one_too_low_fails_the_same_check():
    mech = PartitionSelection.for_budget(1, 0.05, ADD_REMOVE)
    broken = PartitionSelection(mech.scale, mech.threshold - 1)  # states mech's cost, has a lower threshold
    assert worst(broken, add_remove_pairs(), mech.cost.epsilon) > mech.cost.delta


def test_partition_selection_is_dp_under_substitution_by_group_privacy():
    mech = PartitionSelection.for_budget(1, 0.05, SUBSTITUTE)
    cost = mech.cost  # (2ε₁, 2e^{ε₁}δ₁) from the per-step (ε₁, δ₁) = (1/2, ...)
    assert mech.steps == 2 and mech.scale == 2
    assert cost.epsilon == pytest.approx(1.0) and cost.delta <= 0.05
    assert worst(mech, substitute_pairs(), cost.epsilon) <= cost.delta + 1e-12
    one_step = PartitionSelection.for_budget(1, 0.05, ADD_REMOVE)  # the add/remove mechanism is not enough
    assert worst(one_step, substitute_pairs(), one_step.cost.epsilon) > one_step.cost.delta


# -- the release probability of the real sampler ----------------------------------------------------


def test_the_sampler_releases_each_value_with_its_closed_form_probability():
    """N = 20,000 values of one count per run: accept |p̂ − p| <= 5σ (a false alarm has probability
    < 6e-7). Power: each alternative (threshold off by one, or twice the scale) lies more than
    5σ + 5σ_alt from p, so it is accepted with probability < 6e-7 (power > 1 − 6e-7); checked below."""
    mech = PartitionSelection.for_budget(Fraction(1, 2), 1e-6, ADD_REMOVE)
    n = 20_000
    rand = Randomness.from_seed(11)
    for count in (mech.threshold - 2, mech.threshold, mech.threshold + 3):
        p = release_probability(mech, count)
        sd = math.sqrt(p * (1 - p) / n)
        for alt in (
            PartitionSelection(mech.scale, mech.threshold + 1),
            PartitionSelection(mech.scale, mech.threshold - 1),
            PartitionSelection(mech.scale * 2, mech.threshold),
        ):
            q = release_probability(alt, count)
            assert abs(q - p) > 5 * sd + 5 * math.sqrt(q * (1 - q) / n)  # the stated power
        answer = ValueCounts("x", tuple(range(n)), np.full(n, count, dtype=np.int64))
        released = mech.randomise(answer, rand)
        assert abs(len(released) / n - p) <= 5 * sd
        assert list(released) == sorted(released)  # the values only, in order


# -- bins --------------------------------------------------------------------------------------------


def test_grids_and_edges_are_public_and_on_the_grid():
    assert grid_edges(Column("k", "integer", lower=0, upper=5), 256) == (0, 1, 2, 3, 4, 5)
    log = grid_edges(Column("w", "numeric", lower=1, upper=1e5), 256, log=True)
    assert log[0] == 1 and log[-1] == 1e5 and len(log) == 257 and all(np.diff(log) > 0)
    zero = grid_edges(Column("w", "numeric", lower=0, upper=1e6), 256, log=True)  # log(1 + x): a column with zeros
    assert (
        zero[0] == 0
        and zero[-1] == 1e6
        and len(zero) == 257
        and np.allclose(np.diff(np.log1p(zero)), math.log1p(1e6) / 256, rtol=0.03)
    )
    grid = tuple(range(11))
    assert quantile_edges(np.array([0] * 10), grid, 2) == (0, 5, 10)  # no noisy mass: equal on the grid
    assert quantile_edges(np.array([9, 0, 0, 0, 0, 0, 0, 0, 0, 1]), grid, 4) == (0, 1, 10)  # repeated edges merge
    # raw cumulative sums, kept >= 0 and rising: a negative count cancels mass after it
    assert quantile_edges(np.array([-50, 4, 4, 0, 0, 0, 0, 0, 0, 0]), grid, 2) == (0, 5, 10)
    assert quantile_edges(np.array([4, -2, 4, 0, 0, 0, 0, 0, 0, 0]), grid, 2) == (0, 1, 10)


def skeleton(**columns) -> dict:
    return {"name": "t", "columns": columns}


def test_bins_are_read_only_inside_charged_measurements_and_come_from_the_noisy_table(tmp_path, monkeypatch):
    events, noisy = [], []
    reserved = []

    def spy(name):
        original = getattr(NumpyEngine, name)

        def method(self, *args, **kwargs):
            events.append((name, ACTIVE.get() is not None, bool(reserved)))
            return original(self, *args, **kwargs)

        monkeypatch.setattr(NumpyEngine, name, method)

    for name in ("value_counts", "_raw_counts", "contingency", "_cell_counts", "values", "num_rows", "ensure_valid", "_validate"):
        spy(name)
    real_reserve, real_randomise = Ledger.reserve, DiscreteLaplace.randomise
    monkeypatch.setattr(Ledger, "reserve", lambda self, *a, **k: (reserved.append(1), real_reserve(self, *a, **k))[1])

    def randomise(self, answer, rand):
        out = real_randomise(self, answer, rand)
        noisy.append(out)
        return out

    monkeypatch.setattr(DiscreteLaplace, "randomise", randomise)
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"x": rng.integers(0, 1000, 3000), "g": rng.choice(["a", "b"], 3000)})
    spec = skeleton(
        x={"kind": "integer", "lower": 0, "upper": 999, "bins": "TODO"}, g={"kind": "categorical", "categories": "TODO"}
    )
    result = dipsy.discover_domain(
        data, spec, epsilon=1, delta=1e-6, dataset_id="t", bins={"x": 5}, ledger=tmp_path / "l.sqlite", seed=1
    )
    before = [e for e in events if not e[2]]  # only the validation of the gridded column, as a release's
    assert {e[0] for e in before} == {"ensure_valid", "_validate"} and all(not active for _, active, _ in before)
    after = [e for e in events if e[2]]
    assert {"value_counts", "contingency"} <= {e[0] for e in after}  # the spy sees the reads (positive control)
    assert all(active for _, active, _ in after)  # every read after the charge is inside a measurement
    request = plan_discovery(spec, 1, 1e-6, bins={"x": 5}).requests[0]
    assert result.bins["x"] == quantile_edges(noisy[0], request.grid, 5)
    assert all(isinstance(e, int) for e in result.bins["x"])  # integer columns get integer edges
    assert result.categories["g"] == ("a", "b")


@pytest.mark.parametrize("log", [False, True])
def test_edges_land_near_the_true_quantiles_of_a_known_distribution(log):
    """X = 1 + 999·Beta(2, 5) on [1, 1000], n = 200,000, G = 256 cells, ε = 1, k = 4.

    Tolerance for the edge at quantile p (derived, not tuned): the grid cell it snaps within (its
    width h at x_p), plus the mass error turned into x by the density f(x_p): sampling,
    4.5·sqrt(p(1−p)/n), and noise, at most G·E[max(Z, 0)] + 6·sqrt(G·Var Z) counts (the clipped
    noise summed over every cell) over n."""
    n, k, cells = 200_000, 4, 256
    law = stats.beta(2, 5, loc=1, scale=999)
    data = pd.DataFrame({"x": law.rvs(size=n, random_state=np.random.default_rng(5))})
    spec = skeleton(x={"kind": "numeric", "lower": 1, "upper": 1000, "bins": "TODO"})
    edges = dipsy.discover_domain(data, spec, epsilon=1, dataset_id="t", bins={"x": k}, log=["x"] if log else (), seed=2).bins[
        "x"
    ]
    grid = np.asarray(grid_edges(Column("x", "numeric", lower=1, upper=1000), cells, log))
    q = math.exp(-1.0)
    positive_mean, var = q / ((1 + q) * (1 - q)), 2 * q / (1 - q) ** 2
    noise = (cells * positive_mean + 6 * math.sqrt(cells * var)) / n
    assert len(edges) == k + 1
    for j, edge in enumerate(edges[1:-1], start=1):
        p = j / k
        x = law.ppf(p)
        h = np.diff(grid)[np.searchsorted(grid, x) - 1]
        tolerance = h + (4.5 * math.sqrt(p * (1 - p) / n) + noise) / law.pdf(x)
        assert abs(edge - x) <= tolerance, (p, edge, x, tolerance)


# -- engines -------------------------------------------------------------------------------------------


TRICKY = pd.DataFrame(
    {
        "code": ["01", "1", " 1 ", "1.0", "2", "x", None, "NA", "1e3", "True", "TRUE", "inf", "7"],
        "num": [1.5, 2, 2.0, np.nan, -0.0, 0, 3, 1e20, 2, 2, 1.5, 9, 9],
    }
)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_both_engines_count_raw_values_identically(tmp_path, fmt):
    path = tmp_path / f"d.{fmt}"
    TRICKY.to_csv(path, index=False) if fmt == "csv" else TRICKY.to_parquet(path, index=False)
    read = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    scope = Domain(tuple(Column(c, "categorical", categories=("?",)) for c in TRICKY.columns))
    duck = DuckDBEngine(path, scope)
    try:
        for column in TRICKY.columns:
            a, b = duck.value_counts(column), NumpyEngine(read, scope).value_counts(column)
            assert a.values == b.values and a.counts.tolist() == b.counts.tolist()
    finally:
        duck.close()
    codes = NumpyEngine(read, scope).value_counts("code")
    na = {} if fmt == "csv" else {"NA": 1}  # a missing-value marker in a CSV file, a text in a Parquet one
    assert dict(zip(codes.values, codes.counts.tolist())) == {1: 4, 2: 1, 7: 1, 1000: 1, "True": 2, "x": 1, **na}


def test_one_record_moves_one_count_whatever_the_column_type():
    """'01' reads as the number 1 on its own, not by the column's inferred type (which one text
    value would change for every other record)."""
    scope = Domain((Column("c", "categorical", categories=("?",)),))
    x = NumpyEngine(pd.DataFrame({"c": [1, 1, 2]}), scope).value_counts("c")
    y = NumpyEngine(pd.DataFrame({"c": ["01", "1", "2", "zz"]}), scope).value_counts("c")
    assert dict(zip(x.values, x.counts.tolist())) == {1: 2, 2: 1}
    assert dict(zip(y.values, y.counts.tolist())) == {1: 2, 2: 1, "zz": 1}


# -- the ledger, the domain, later releases, the command line --------------------------------------------


def survey(tmp_path):
    rng = np.random.default_rng(3)
    n = 700
    region = np.array(["north"] * 300 + ["south"] * 250 + ["east"] * 149 + ["unique-island"])
    frame = pd.DataFrame({"region": rng.permutation(region), "income": rng.gamma(2.0, 20_000, n).round(2)})
    data = tmp_path / "survey.csv"
    frame.to_csv(data, index=False)
    skel = tmp_path / "skeleton.yaml"
    skel.write_text(
        yaml.safe_dump(
            skeleton(
                region={"kind": "categorical", "categories": "TODO", "role": "sensitive"},
                income={"kind": "numeric", "lower": 1, "upper": 1_000_000, "bins": "TODO", "clip": True},
            )
        )
    )
    return data, skel


def test_cli_discovers_charges_the_ledger_and_every_later_release_says_so(tmp_path, capsys):
    data, skel = survey(tmp_path)
    out, ledger = tmp_path / "domain.yaml", tmp_path / "ledger.sqlite"
    code = main(
        [
            "domain",
            "discover",
            str(data),
            "--domain",
            str(skel),
            "--out",
            str(out),
            "--epsilon",
            "2",
            "--delta",
            "1e-6",
            "--bins",
            "income=4",
            "--log",
            "income",
            "--ledger",
            str(ledger),
            "--dataset-id",
            "survey",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0 and "charged ε = 2" in printed
    domain = Domain.load(out)
    assert domain["region"].categories == ("east", "north", "south")  # the record held once is not released
    assert len(domain["income"].bins) == 5 and domain.discovered.dataset_id == "survey" and not domain.discovered.seeded
    spends = Ledger(ledger).spends("survey")
    assert {s["method"] for s in spends} == {"domain-discovery"} and {s["guarantee"] for s in spends} == {"dp"}
    assert sum(s["epsilon"] for s in spends) == pytest.approx(2.0) and sum(s["delta"] or 0 for s in spends) <= 1e-6
    assert {s["relation"] for s in spends} == {"add-remove"}
    release = dipsy.synthesize(data, out, method="perturbed-histogram", epsilon=1, on_invalid="drop", seed=0)
    sentence = release.statement.public[-1]
    assert sentence.startswith("the categories of region and the bins of income, released by DP discovery")
    assert domain.discovered.release_id in sentence and "does not include that cost" in sentence
    only_income = dipsy.synthesize(data, out, method="perturbed-histogram", epsilon=1, columns=["income"], seed=0)
    assert only_income.statement.public[-1].startswith("the bins of income,")
    release.save(tmp_path / "rel")
    assert Domain.load(tmp_path / "rel" / "domain.yaml").discovered == domain.discovered.project(domain.names)


def test_a_seeded_discovery_is_a_test_and_its_domain_says_not_private(tmp_path):
    data, skel = survey(tmp_path)
    result = dipsy.discover_domain(
        data,
        skel,
        tmp_path / "d.yaml",
        epsilon=2,
        delta=1e-6,
        dataset_id="survey",
        bins={"income": 3},
        ledger=tmp_path / "l.sqlite",
        seed=4,
        neighbouring="substitute",
    )
    assert {s["guarantee"] for s in Ledger(tmp_path / "l.sqlite").spends("survey")} == {"test"}
    assert {s["relation"] for s in Ledger(tmp_path / "l.sqlite").spends("survey")} == {"substitute"}
    assert result.domain.discovered.seed == 4
    with pytest.raises(PrivacyError, match="seeded test discovery"):  # an unseeded release would claim DP
        dipsy.synthesize(
            data, tmp_path / "d.yaml", method="dirichlet-multinomial", epsilon=1, columns=["region"], on_invalid="drop"
        )
    release = dipsy.synthesize(
        data, tmp_path / "d.yaml", method="dirichlet-multinomial", epsilon=1, columns=["region"], on_invalid="drop", seed=1
    )
    assert not release.statement.private and any(p.startswith("NOT PRIVATE") for p in release.statement.public)


def test_dropped_rows_narrow_a_relation_that_publishes_n_and_only_that(tmp_path):
    """Under substitution n is public: a row that stops matching the domain changes it, so the
    statement narrows the relation to the rows that match; under add/remove nothing changes."""
    data, skel = survey(tmp_path)
    dipsy.discover_domain(data, skel, tmp_path / "d.yaml", epsilon=2, delta=1e-6, dataset_id="survey", bins={"income": 3})
    fixed = dipsy.synthesize(
        data, tmp_path / "d.yaml", method="dirichlet-multinomial", epsilon=1, columns=["region"], on_invalid="drop", seed=1
    )
    assert "is not covered" in fixed.statement.neighbouring and fixed.statement.relation.fixes_n
    free = dipsy.synthesize(
        data, tmp_path / "d.yaml", method="perturbed-histogram", epsilon=1, columns=["income"], on_invalid="drop", seed=1
    )
    assert "is not covered" not in free.statement.neighbouring and not free.statement.relation.fixes_n


def test_the_budget_splits_equally_and_nothing_found_stays_todo(tmp_path):
    frame = pd.DataFrame({"a": ["x"] * 400, "b": [f"id{i}" for i in range(400)]})
    spec = skeleton(a={"kind": "categorical", "categories": "TODO"}, b={"kind": "ordinal", "categories": ["TODO"]})
    result = dipsy.discover_domain(
        frame, spec, tmp_path / "d.yaml", epsilon=1, delta=1e-6, dataset_id="ab", seed=0, ledger=tmp_path / "l.sqlite"
    )
    assert [m["epsilon"] for m in result.measurements] == [0.5, 0.5]
    assert all(m["delta"] <= 5e-7 for m in result.measurements)
    assert result.categories == {"a": ("x",), "b": ()} and result.left == ("b",) and result.domain is None
    with pytest.raises(DomainError, match=r"TODO placeholder.*b \(categories\)"):
        Domain.load(tmp_path / "d.yaml")  # the charge stands; the column waits for public knowledge
    assert len(Ledger(tmp_path / "l.sqlite").spends("ab")) == 2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"epsilon": 1}, "needs delta="),
        ({"epsilon": 1, "delta": 0.01}, "delta must lie in"),
        ({"epsilon": 1, "delta": 1e-6, "categories": ["nope"]}, "does not list"),
        ({"epsilon": 1, "delta": 1e-6, "bins": {"region": 3}}, "not an integer or numeric column"),
        ({"epsilon": 1, "delta": 1e-6, "categories": []}, "TODOs that discovery does not fill"),
        ({"epsilon": 1, "delta": 1e-6, "bins": {"income": 1}}, "number of bins"),
        ({"epsilon": 1, "delta": 1e-6, "bins": {"income": 3}, "log": ["region"]}, "not among the bins="),
        ({"epsilon": 0, "delta": 1e-6, "bins": {"income": 3}}, "epsilon must be"),
    ],
)
def test_bad_requests_are_refused_before_anything_is_read_or_charged(tmp_path, kwargs, message):
    data, skel = survey(tmp_path)
    kwargs = {"bins": {"income": 3}, **kwargs}
    with pytest.raises(DipsyError, match=message):
        dipsy.discover_domain(data, skel, tmp_path / "d.yaml", dataset_id="s", ledger=tmp_path / "l.sqlite", **kwargs)
    assert not (tmp_path / "l.sqlite").exists() and not (tmp_path / "d.yaml").exists()


def test_a_cap_refuses_the_discovery_and_a_failure_takes_the_spend_back(tmp_path, monkeypatch):
    data, skel = survey(tmp_path)
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap("s", ApproxDP(1.0, 1e-6), ADD_REMOVE)
    with pytest.raises(BudgetError):
        dipsy.discover_domain(data, skel, epsilon=2, delta=1e-6, dataset_id="s", bins={"income": 3}, ledger=led)
    assert led.spends("s") == []
    monkeypatch.setattr("dipsy.discovery_run.quantile_edges", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        dipsy.discover_domain(data, skel, epsilon=1, delta=1e-6, dataset_id="s", bins={"income": 3}, ledger=led)
    assert led.spends("s") == []


def test_the_discovered_block_is_kept_checked_and_projected(tmp_path):
    block = {
        "release_id": "r",
        "dataset_id": "d",
        "ledger": "l.sqlite",
        "seed": None,
        "dipsy_version": "0.1.0",
        "date": "2026-01-01T00:00:00+00:00",
        "columns": {
            "g": {
                "field": "categories",
                "definition": "approximate-DP",
                "epsilon": 0.5,
                "delta": 1e-7,
                "relation": "add-remove",
                "theta": 1,
                "mechanism": "partition selection",
            }
        },
    }
    spec = {
        "columns": {"g": {"kind": "categorical", "categories": ["a"]}, "n": {"kind": "integer", "lower": 0, "upper": 3}},
        "discovered": block,
    }
    d = Domain.from_dict(spec)
    assert isinstance(d.discovered, Discovery) and Domain.from_dict(d.to_dict()) == d
    assert d.project(["n"]).discovered is None and d.project(["g"]).discovered == d.discovered
    assert d.sha256() != Domain.from_dict({"columns": spec["columns"]}).sha256()
    path = tmp_path / "d.yaml"
    d.save(path)
    assert Domain.load(path) == d
    for broken, message in [
        ({**block, "columns": {"n": block["columns"]["g"]}}, "column is integer"),
        ({**block, "columns": {"zz": block["columns"]["g"]}}, "does not list"),
        ({**block, "seed": "x"}, "seed"),
        ({k: v for k, v in block.items() if k != "date"}, "not a mapping"),
    ]:
        with pytest.raises(DomainError, match=message):
            Domain.from_dict({**spec, "discovered": broken})


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "needs --delta"),
        (["--delta", "1e-6", "--bins", "income"], "is not COL=K"),
        (["--delta", "1e-6", "--bins", "income=4", "--log", "region"], "not among the --bins"),
    ],
)
def test_cli_refusals_leave_nothing_behind(tmp_path, capsys, extra, message):
    data, skel = survey(tmp_path)
    out, ledger = tmp_path / "new" / "domain.yaml", tmp_path / "led" / "ledger.sqlite"
    args = [
        "domain",
        "discover",
        str(data),
        "--domain",
        str(skel),
        "--out",
        str(out),
        "--epsilon",
        "1",
        "--ledger",
        str(ledger),
        "--dataset-id",
        "s",
    ]
    code = main(args + (extra or ["--bins", "income=4"]))
    assert code == 2 and message in capsys.readouterr().err
    assert not out.parent.exists() and not ledger.parent.exists()
