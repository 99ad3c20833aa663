"""DPSyn's NIST 2020 encoding (S-002 "Exacting Information from the Public Dataset"; METHODS.md §4.2).

The sprint-2 records are not available (Git-LFS only), so the tests use the real schema
(``tests/data/nist2020_sprint2/parameters.json``, a copy of the challenge's) and a small excerpt
in that schema, drawn here with the semantic rules the write-up names (no coverage means no
insurance of any kind; EMPSTAT and LABFORCE follow EMPSTATD).
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dipsy
from dipsy.engine import engine_for
from dipsy.errors import DipsyError
from dipsy.methods.marginals.nist_encoding import NIST2020, NIST2020_WRITE_UP, SEPARATOR, Spec, bin_codes, derive, load_schema

SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "nist2020_sprint2" / "parameters.json"
SCHEMA = load_schema(SCHEMA_PATH)
EMPSTATD = [0, 10, 12, 14, 20, 22, 30, 31]  # a part of the schema's 15 values


def excerpt(n: int, seed: int, pumas: int = 3) -> pd.DataFrame:
    """n records in the sprint-2 schema, as the CSV is read (every value text)."""
    rng = np.random.default_rng(seed)
    frame: dict[str, np.ndarray] = {"PUMA": rng.choice(SCHEMA["PUMA"]["values"][:pumas], n), "YEAR": rng.choice([2017, 2018], n)}
    for c, spec in SCHEMA.items():
        if c not in frame and "values" in spec:
            frame[c] = rng.choice(spec["values"], n)
    covered = frame["HCOVANY"] == 2
    for c in ("HCOVPRIV", "HINSEMP", "HINSCAID", "HINSCARE"):
        frame[c] = np.where(covered, frame[c], 1)
    frame["HINSEMP"] = np.where(frame["HCOVPRIV"] == 1, 1, frame["HINSEMP"])  # employer insurance is private
    frame["EMPSTATD"] = rng.choice(EMPSTATD, n)
    frame["EMPSTAT"] = frame["EMPSTATD"] // 10
    frame["LABFORCE"] = np.select([frame["EMPSTATD"] == 0, frame["EMPSTATD"] >= 30], [0, 1], 2)
    frame["AGE"] = rng.integers(0, 96, n)
    for c in ("INCTOT", "INCWAGE", "INCWELFR", "INCINVST", "INCEARN"):
        frame[c] = rng.integers(-5_000, 150_000, n)
    for c in ("POVERTY", "HHWT", "PERWT"):
        frame[c] = rng.integers(0, 502, n)
    for c in ("DEPARTS", "ARRIVES"):
        frame[c] = rng.integers(0, 24, n) * 100 + rng.integers(0, 60, n)
    frame["sim_individual_id"] = np.arange(n)
    return pd.DataFrame({c: frame[c] for c in [*SCHEMA, "sim_individual_id"]}).astype(str)


@pytest.fixture(scope="module")
def public() -> pd.DataFrame:
    return excerpt(400, 0)


@pytest.fixture(scope="module")
def encoding(public):
    return derive(public, SCHEMA)


# -- what is derived, and from what ------------------------------------------------------------------


@pytest.mark.parametrize("spec", [NIST2020, NIST2020_WRITE_UP])
def test_merged_categories_are_the_combinations_the_public_data_show(public, spec):
    enc = derive(public, SCHEMA, spec)
    for new, parts in spec.merges:
        seen = {SEPARATOR.join(t) for t in public[list(parts)].itertuples(index=False, name=None)}
        assert set(enc.categories[new]) == seen and len(enc.categories[new]) == len(seen)
    hins = enc.categories["HINS-COV"]
    assert len(hins) <= 13 and "1+1+1+1+1" in hins and not any(c.startswith("1+") and c != "1+1+1+1+1" for c in hins)


def test_other_columns_take_the_schema_s_values_not_the_data_s(public, encoding):
    """PUMA: the schema's 181 codes, though the public excerpt holds 3 (the code reads the private file's)."""
    assert public["PUMA"].nunique() == 3
    assert encoding.categories["PUMA"] == tuple(SCHEMA["PUMA"]["values"])
    assert encoding.categories["RACE"] == tuple(str(v) for v in SCHEMA["RACE"]["values"])


def test_the_confidential_data_change_nothing_derived(public, encoding):
    """derive reads its two arguments only; the encoding is the same whatever data are encoded later."""
    other = derive(public.copy(), SCHEMA)
    encoding.encode(excerpt(300, 5, pumas=30))
    assert other == encoding == derive(public, SCHEMA)


@pytest.mark.parametrize(
    "column, edges",
    [
        ("AGE", np.arange(20, 105, 5)),
        ("INCTOT", np.arange(0, 105_000, 5_000)),
        ("POVERTY", np.arange(0, 520, 20)),
        ("HHWT", np.arange(0, 520, 20)),
        ("DEPARTS", np.array([h * 100 + m for h in range(24) for m in (0, 15, 30, 45)])),
    ],
)
def test_bins_are_the_configs_right_closed_bins(encoding, column, edges):
    """(−∞, e₀], (e₀, e₁], …, (e_last, ∞): as pandas.cut with right=True over the config's edges."""
    assert len(encoding.categories[column]) == len(edges) + 1
    values = pd.Series(np.r_[edges, edges + 1, edges - 1, -(10**6), 10**7].astype(float))
    expected = pd.cut(values, np.r_[-np.inf, edges, np.inf]).cat.codes.astype(str)
    assert (bin_codes(values, dict(NIST2020.bins)[column]) == expected).all()


def test_column_counts_of_the_code_and_of_the_write_up():
    """The write-up: 25 attributes, 23 one-way and C(23, 2) = 253 two-way marginals besides PUMA and
    YEAR; the submitted code's grouping (EMPSTATD+WORKEDYR+WRKLSTWK): 24, 22 and 231."""
    for spec, count in ((NIST2020_WRITE_UP, 25), (NIST2020, 24)):
        names = spec.encoded_names([*SCHEMA, "sim_individual_id"])
        rest = [c for c in names if c not in ("PUMA", "YEAR")]
        assert (len(names), len(rest), len(list(combinations(rest, 2)))) == (count, count - 2, (count - 2) * (count - 3) // 2)


def test_determined_columns_are_restored_by_the_public_map(public, encoding):
    decoded = encoding.decode(encoding.encode(public))
    assert (decoded["EMPSTAT"] == public["EMPSTAT"]).all() and (decoded["LABFORCE"] == public["LABFORCE"]).all()
    assert encoding.restore["EMPSTAT"] == {str(d): str(d // 10) for d in EMPSTATD}


def test_round_trip(public, encoding):
    encoded = encoding.encode(public)
    assert tuple(encoded.columns) == encoding.names and "sim_individual_id" not in encoded
    decoded = encoding.decode(encoded)
    assert list(decoded.columns) == list(SCHEMA)
    bins = dict(NIST2020.bins)
    for c in SCHEMA:
        if c in bins:  # a value inside the same bin
            assert (bin_codes(decoded[c], bins[c]) == bin_codes(public[c], bins[c])).all(), c
        else:
            assert (decoded[c] == public[c]).all(), c


# -- with dipsy's domain and engine ----------------------------------------------------------------


def test_the_encoded_public_data_fit_the_domain(public, encoding):
    domain = encoding.domain()
    assert domain.names == encoding.names and all(domain[c].kind == "categorical" for c in domain.names)
    assert dipsy.Domain.from_dict(domain.to_dict()) == domain  # it saves and loads as a domain file
    assert engine_for(encoding.encode(public), domain).num_rows() == len(public)


def test_an_unseen_combination_is_invalid_not_guessed(public, encoding):
    """A confidential record whose combination the public data never show: refused, or dropped on request."""
    private = public.sample(50, random_state=1).reset_index(drop=True)  # every combination seen in public
    private.loc[private.index[:3], ["HCOVANY", "HCOVPRIV", "HINSEMP", "HINSCAID", "HINSCARE"]] = ["1", "2", "2", "2", "2"]
    encoded = encoding.encode(private)
    assert (encoded["HINS-COV"].iloc[:3] == "1+2+2+2+2").all()
    with pytest.raises(DipsyError, match="HINS-COV"):
        engine_for(encoded, encoding.domain()).ensure_valid()
    assert engine_for(encoded, encoding.domain(), on_invalid="drop").num_rows() == len(private) - 3


def test_release_decodes_to_the_schema(tmp_path, public, encoding):
    """An end-to-end dpsyn release on encoded data, decoded back to the 35 columns of the schema."""
    encoding.encode(public).to_csv(tmp_path / "public.csv", index=False)
    private = excerpt(300, 3)
    release = dipsy.synthesize(
        encoding.encode(private),
        encoding.domain(),
        method="dpsyn",
        epsilon=0.1,
        delta=1e-9,
        on_invalid="drop",
        seed=2,
        options={
            "public": str(tmp_path / "public.csv"),
            "groups": "YEAR",
            "least": 20,
            "multiple": 10,
            "pool": 100,
            "iterations": 2,
        },
    )
    synthetic = release.tables[0]
    decoded = encoding.decode(synthetic.astype(str))
    assert list(decoded.columns) == list(SCHEMA) and len(decoded) == len(synthetic) > 0
    for c in ("SEX", "MARST", "HCOVANY", "EMPSTATD", "EMPSTAT", "LABFORCE"):
        assert set(decoded[c]) <= {str(v) for v in SCHEMA[c]["values"]}, c


# -- refusals ---------------------------------------------------------------------------------------


def test_refusals(public, tmp_path):
    with pytest.raises(DipsyError, match="not a function"):
        derive(public.assign(EMPSTAT=np.where(np.arange(len(public)) % 2, "1", "2")), SCHEMA)
    with pytest.raises(DipsyError, match="does not list"):
        derive(public.assign(SEX="9"), SCHEMA)
    with pytest.raises(DipsyError, match="lack column"):
        derive(public.drop(columns="MARST"), SCHEMA)
    with pytest.raises(DipsyError, match="more than one step"):
        Spec("bad", bins=(("AGE", (1, 2)),), merges=(("X", ("AGE", "SEX")),))
    (tmp_path / "parameters.json").write_text('{"runs": []}', encoding="utf-8")
    with pytest.raises(DipsyError, match="no 'schema'"):
        load_schema(tmp_path / "parameters.json")
