"""What a release shows is what its statement accounts for: an outside check's findings, each reproduced.

Roles are the contract (a column leaves a release unchanged only if the domain declares it
public), relations name what they leave public and the ledger never adds different ones as one
unit, a cap covers every release of its data set (local ones too), a discovered domain is
recorded where its discovery was charged, an adaptive plan states its ex-ante guarantee, and the
smaller findings (the methods listing, seeded reproducibility, a public file that is the data).
Each test fails on the code before these rules.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

import dipsy
from dipsy.cli import main
from dipsy.errors import BudgetError, PrivacyError
from dipsy.methods import get
from dipsy.privacy import ApproxDP, Ledger
from dipsy.privacy.budget import LocalDP

EXAMPLES = Path(__file__).parents[1] / "examples"


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def adult(tmp_path_factory) -> Path:
    """3,000 of Adult's confidential rows, its public sample, and its domain with roles to vary."""
    folder = tmp_path_factory.mktemp("adult")
    pd.read_csv(EXAMPLES / "adult" / "priv.csv").head(3000).to_csv(folder / "priv.csv", index=False)
    shutil.copy(EXAMPLES / "adult" / "pub.csv", folder / "pub.csv")
    return folder


def adult_domain(folder: Path, name: str, public: set[str]) -> Path:
    """Adult's domain with exactly the columns ``public`` declared public (the others sensitive)."""
    spec = yaml.safe_load((EXAMPLES / "adult" / "domain.yaml").read_text())
    for column, entry in spec["columns"].items():
        entry["role"] = "public" if column in public else "sensitive"
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def rdt(folder: Path, domain: Path, sensitive: str, out: str, *more) -> list:
    return [
        "synth",
        folder / "priv.csv",
        "--domain",
        domain,
        "--method",
        "rdt",
        "--epsilon",
        "0.5",
        "--option",
        f"sensitive={sensitive}",
        "--option",
        f"structure={folder / 'pub.csv'}",
        "--option",
        "trees=1",
        "--option",
        "n_b=200",
        "--option",
        "structure_weight=10",
        "--out",
        folder / out,
        "--ledger",
        folder / f"{out}.sqlite",
        *more,
    ]


OTHERS = {"age", "education", "workclass", "occupation", "hours-per-week"}


def test_two_rdt_releases_repeating_different_columns_are_never_one_total(adult, capsys):
    """Finding 1: `sensitive=sex` (race repeated) then `sensitive=race` (sex repeated) under one cap
    of ε = 1 were "ε = 1 under substitute-values", and together gave every record's education, sex
    and race. The second is now refused, naming the first; nothing of it is written or spent."""
    race_public = adult_domain(adult, "race-public", OTHERS | {"race"})
    sex_public = adult_domain(adult, "sex-public", OTHERS | {"sex"})
    ledger = adult / "one.sqlite"
    code, out, err = run(capsys, *rdt(adult, race_public, "sex", "one", "--dataset-id", "adult", "--budget-cap", "1"))
    assert code == 0, err
    released = json.loads((adult / "one" / "release.json").read_text())
    assert released["privacy"]["relation"]["public"] == sorted(OTHERS | {"race"})
    args = rdt(adult, sex_public, "race", "two", "--dataset-id", "adult")
    args[args.index(adult / "two.sqlite")] = ledger
    code, out, err = run(capsys, *args)
    assert code == 2 and "conflicts with release" in err and "shows sex exactly for every record" in err, err
    assert not (adult / "two").exists()
    assert {s["method"] for s in Ledger(ledger).spends("adult")} == {"rdt"} and len(
        {s["release_id"] for s in Ledger(ledger).spends("adult")}
    ) == 1
    [line] = Ledger(ledger).totals()  # what 'dipsy budget show' prints
    assert line.describe().startswith(
        "ε = 0.5 under substitute-values (public: age, education, hours-per-week, occupation, race,"
    )


def test_a_column_declared_sensitive_is_never_released_as_it_is(adult, capsys):
    """Finding 2: with every column declared sensitive, `rdt sensitive=sex` published race (and the
    others) verbatim. It is refused before anything is read or charged."""
    none_public = adult_domain(adult, "none-public", set())
    code, out, err = run(capsys, *rdt(adult, none_public, "sex", "three"))
    assert code == 2 and "rdt would release the column 'age' of every record as it is" in err, err
    assert "declares it sensitive" in err and "role: public" in err
    assert not (adult / "three").exists() and not (adult / "three.sqlite").exists()


def test_the_pseudo_posteriors_predictors_must_be_declared_public(monkeypatch):
    """Finding 3: predictors=log(Income),UrbanRural repeated Income, declared sensitive, for every CE
    record. Refused before the data are opened; with a domain that declares Income public the
    release's relation names what it leaves public, exactly."""
    monkeypatch.setattr("dipsy.api.engine_for", lambda *a, **k: pytest.fail("the data were opened"))
    options = {"response": "log(Expenditure)", "predictors": "log(Income),UrbanRural", "range": "0.6,1.2"}
    with pytest.raises(PrivacyError, match="release the column 'Income' of every record as it is.*declares it sensitive"):
        dipsy.synthesize(
            EXAMPLES / "ce" / "CEdata.csv",
            EXAMPLES / "ce" / "domain.yaml",
            method="pseudo-posterior",
            columns=["Expenditure", "Income", "UrbanRural"],
            options=options,
        )
    partial = dipsy.Domain.load(EXAMPLES / "ce" / "partial.yaml")
    synth = get("pseudo-posterior")(LocalDP(10.0), 5, options)
    plan = synth.plan(994, partial)
    synth.check_roles(partial, plan)
    assert plan.relation.kind == "response-in-range" and plan.relation.public == ("Income", "UrbanRural")
    assert plan.relation.response == "Expenditure" and plan.relation.within == (0.6, 1.2)
    assert "Income, UrbanRural stay as they are" in plan.relation.describe()


def test_a_spent_cap_stops_a_local_release(tmp_path, monkeypatch):
    """Finding 6: after a cap of ε = 1 was spent, a pseudo-posterior release of the same data set was
    accepted (its relation said plain add/remove). Now it is refused before anything is read,
    unless the data set has a cap for local releases too."""
    ledger = Ledger(tmp_path / "l.sqlite")
    data = pd.read_csv(EXAMPLES / "ce" / "CEdata.csv")
    dipsy.synthesize(
        data,
        EXAMPLES / "ce" / "domain.yaml",
        method="dirichlet-multinomial",
        epsilon=1.0,
        columns=["Race"],
        ledger=ledger,
        dataset_id="ce",
        budget_cap=1.0,
    )
    with pytest.raises(BudgetError, match="would take it to"):
        dipsy.synthesize(
            data,
            EXAMPLES / "ce" / "domain.yaml",
            method="dirichlet-multinomial",
            epsilon=0.1,
            columns=["Race"],
            accept_noise=True,
            ledger=ledger,
            dataset_id="ce",
        )
    monkeypatch.setattr(get("pseudo-posterior"), "run", lambda *a: pytest.fail("the mechanism ran"))
    options = {"response": "log(Expenditure)", "predictors": "log(Income),UrbanRural"}
    with pytest.raises(BudgetError, match="no cap for local releases"):
        dipsy.synthesize(
            data, EXAMPLES / "ce" / "partial.yaml", method="pseudo-posterior", options=options, ledger=ledger, dataset_id="ce"
        )
    with pytest.raises(BudgetError, match="the cap ε = 2 is a DP one"):  # a DP cap given to a local release
        dipsy.synthesize(
            data,
            EXAMPLES / "ce" / "partial.yaml",
            method="pseudo-posterior",
            options=options,
            ledger=ledger,
            dataset_id="ce",
            budget_cap=2.0,
        )
    assert len({s["release_id"] for s in ledger.spends("ce")}) == 1


@pytest.fixture
def discovered(tmp_path) -> tuple[pd.DataFrame, Path, Path]:
    """CE's Race with its categories discovered (charged to data set 'ce' in l.sqlite)."""
    data = pd.read_csv(EXAMPLES / "ce" / "CEdata.csv")[["Race"]]
    skeleton = {"name": "ce", "columns": {"Race": {"kind": "categorical", "categories": "TODO"}}}
    ledger = tmp_path / "l.sqlite"
    dipsy.discover_domain(data, skeleton, tmp_path / "d.yaml", epsilon=1, delta=1e-8, dataset_id="ce", ledger=ledger)
    return data, tmp_path / "d.yaml", ledger


@pytest.mark.parametrize("where", ["another id", "no id", "no ledger", "another ledger"])
def test_a_discovered_domain_is_released_only_where_its_discovery_was_charged(discovered, tmp_path, where):
    """Finding 7: a domain whose categories cost ε = 1 on data set 'ce' was accepted under another
    data set id or none, whose totals never showed that cost."""
    data, domain, ledger = discovered
    kwargs = {
        "another id": {"ledger": ledger, "dataset_id": "ce-2"},
        "no id": {"ledger": ledger},
        "no ledger": {},
        "another ledger": {"ledger": tmp_path / "other.sqlite", "dataset_id": "ce"},
    }[where]
    with pytest.raises(BudgetError, match="discovered at a cost charged to data set 'ce'"):
        dipsy.synthesize(data, domain, method="dirichlet-multinomial", epsilon=1.0, on_invalid="drop", **kwargs)
    release = dipsy.synthesize(
        data, domain, method="dirichlet-multinomial", epsilon=1.0, on_invalid="drop", ledger=ledger, dataset_id="ce"
    )
    assert release.statement.private


@pytest.mark.parametrize("seed, regime", [(0, {"pure-DP"}), (161, {"pure-DP", "zCDP"})])
def test_dpsyn_states_its_ex_ante_guarantee_whatever_regime_ran(seed, regime):
    """Finding 8: with one set dpsyn stated δ = 0 when the regime its noisy total picked had no
    Gaussian step; the regime is a function of noisy data, so the guarantee is the (ε, δ) the plan
    declared and the ledger reserved. Seeded (test releases) so that each regime is the one that runs:
    unseeded, about 1 run in 300 takes the Gaussian step here."""
    domain = dipsy.Domain.from_sizes({"x": 2, "y": 2})
    data = pd.DataFrame({"x": [0, 1] * 20, "y": [1, 0] * 20})
    public = pd.DataFrame({"x": [0, 1, 1, 0] * 10, "y": [1, 0, 1, 1] * 10})
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        public.to_csv(Path(tmp) / "public.csv", index=False)
        release = dipsy.synthesize(
            data,
            domain,
            method="dpsyn",
            epsilon=2.0,
            delta=1e-6,
            accept_noise=True,
            seed=seed,
            options={"public": str(Path(tmp) / "public.csv"), "least": 10, "multiple": 1, "pool": 200},
        )
    ran = release.statement.measurements
    assert {m["definition"] for m in ran} == regime  # the regime this run's noisy total picked ...
    assert release.statement.total == ApproxDP(2.0, 1e-6)  # ... and the statement is still the declared (ε, δ)
    assert release.statement.to_dict()["if_unseeded"]["delta_total"] == 1e-6


def test_the_methods_listing_states_each_cost_and_relation(capsys):
    """Finding 9: 'each ε/m' for the zCDP and local methods, 'add-remove' for the pseudo-posterior
    and rdt, and the range's "[a·y, b·y]" eaten by the terminal's markup."""
    code, out, err = run(capsys, "methods")
    assert code == 0, err
    lines = out.splitlines()

    def block(name):
        start = next(i for i, line in enumerate(lines) if line.startswith(name + " "))
        end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" ")), len(lines))
        return "\n".join(lines[start:end])

    assert "m sets, each ρ/m" in block("privsyn") and "m sets, each ρ/m" in block("mst")
    assert "each (ε/m, δ/m)" in block("dpsyn") and "m sets, each ε/m" in block("dirichlet-multinomial")
    ppm = block("pseudo-posterior")
    assert "local 2Δ each" in ppm and "neighbours: add-remove" not in ppm and "[a·y, b·y]" in ppm
    assert "substitute-values over the public columns" in block("rdt")


def test_the_forecast_says_what_it_read():
    """Finding 11: "the forecast: before any record is read" — yet synth checks every row first, and
    under substitution the forecast uses the counted n. The release says so."""
    data = pd.read_csv(EXAMPLES / "ce" / "CEdata.csv")
    release = dipsy.synthesize(
        data, EXAMPLES / "ce" / "domain.yaml", method="dirichlet-multinomial", epsilon=5.0, columns=["Race"]
    )
    [n] = [i for i in release.forecast["public_inputs"] if i.startswith("n = ")]
    assert n.startswith("n = 994, the rows that match the domain, counted when the rows were checked against it")


def test_a_seeded_rdt_run_is_reproducible():
    """Finding 12: a seeded rdt run drew its structure seed from the OS unless given."""
    import tempfile

    from test_rdt import DOMAIN, records

    with tempfile.TemporaryDirectory() as tmp:
        records(2000, 1).to_csv(Path(tmp) / "s.csv", index=False)
        opts = {"sensitive": "sex,race", "structure": str(Path(tmp) / "s.csv"), "n_b": 200, "trees": 2}
        one, two = (dipsy.synthesize(records(500, 2), DOMAIN, method="rdt", epsilon=1.0, seed=9, options=opts) for _ in range(2))
        other = dipsy.synthesize(records(500, 2), DOMAIN, method="rdt", epsilon=1.0, seed=10, options=opts)
    pd.testing.assert_frame_equal(one.tables[0], two.tables[0])
    assert one.parameters["structure_seed"] == two.parameters["structure_seed"] != other.parameters["structure_seed"]


def test_the_confidential_file_is_never_its_own_public_source(tmp_path, capsys):
    """Finding 13: `domain init --from-public` took the confidential file itself, and its exact
    ranges and categories then went out with every release."""
    data = tmp_path / "CEdata.csv"
    shutil.copy(EXAMPLES / "ce" / "CEdata.csv", data)
    shutil.copy(data, tmp_path / "copy.csv")
    for public in (data, tmp_path / "copy.csv"):
        code, out, err = run(capsys, "domain", "init", data, "--out", tmp_path / "d.yaml", "--from-public", public)
        assert code == 2 and "is the confidential data file CEdata.csv itself" in err, err
        assert not (tmp_path / "d.yaml").exists()
    # a domain written from a file that is later given as the data: refused at release
    public = tmp_path / "public.csv"
    pd.read_csv(data).head(500).to_csv(public, index=False)
    code, out, err = run(capsys, "domain", "init", public, "--out", tmp_path / "d.yaml", "--from-public", tmp_path / "other.csv")
    assert code == 2  # a missing public file is an error of its own
    text = (EXAMPLES / "ce" / "domain.yaml").read_text()
    from dipsy.api import fingerprint

    spec = yaml.safe_load(text)
    spec["description"] = (
        f"categories and bounds from the public file public.csv (SHA-256 {fingerprint(public)}), by dipsy domain init"
    )
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(PrivacyError, match="is the file the domain's categories and bounds were read from"):
        dipsy.synthesize(public, tmp_path / "e.yaml", method="dirichlet-multinomial", epsilon=1.0, columns=["Race"])
    dipsy.synthesize(data, tmp_path / "e.yaml", method="dirichlet-multinomial", epsilon=1.0, columns=["Race"])
