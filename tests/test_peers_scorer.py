"""The peers benchmark's scorer (benchmarks/peers.py) over data of values and a dipsy domain: the codes
are dipsy's codec's, a copy of the data scores 0, and values off the domain count as mass outside."""

from __future__ import annotations

import sys

import pandas as pd
import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import peers as P  # noqa: E402 - a script, not a package

sys.path.remove(str(ROOT / "benchmarks"))

ACS = ROOT / "examples" / "acs"


@pytest.fixture(scope="module")
def scorer(tmp_path_factory):
    return P.Scorer(ACS / "national2019.csv", ACS / "domain.yaml", tmp_path_factory.mktemp("s") / "three.json")


def test_a_dipsy_domain_is_scored_by_its_codes(scorer, tmp_path):
    data = pd.read_csv(ACS / "national2019.csv")
    assert scorer.columns == list(scorer.domain.names) and len(scorer.marginals[3]) == 256
    path = tmp_path / "copy.csv"
    data.to_csv(path, index=False)
    same = scorer.score(scorer.codes(path))
    assert same["tvd_1"] == same["tvd_2"] == same["tvd_3"] == 0.0 and same["outside_share"] == 0.0
    shuffled = data.copy()
    shuffled["SEX"] = shuffled["SEX"].sample(frac=1.0, random_state=0).to_numpy()  # breaks SEX's associations only
    shuffled.to_csv(path, index=False)
    broken = scorer.score(scorer.codes(path))
    assert broken["tvd_1"] < 1e-12 < broken["tvd_2"] < broken["tvd_3"]


def test_values_off_the_domain_count_as_outside(scorer, tmp_path):
    data = pd.read_csv(ACS / "national2019.csv").head(100)
    data.loc[:9, "SEX"] = 7  # no such code
    path = tmp_path / "bad.csv"
    data.to_csv(path, index=False)
    assert scorer.score(scorer.codes(path))["outside_share"] == pytest.approx(0.1)


def test_a_size_map_is_read_as_before(tmp_path):
    domain = tmp_path / "sizes.json"
    domain.write_text('{"a": 2, "b": 3, "c": 2}')
    data = tmp_path / "d.csv"
    pd.DataFrame({"a": [0, 1, 1], "b": [2, 0, 1], "c": [1, 1, 0]}).to_csv(data, index=False)
    s = P.Scorer(data, domain, tmp_path / "three.json")
    assert s.domain is None and s.sizes == {"a": 2, "b": 3, "c": 2} and s.score(s.codes(data))["tvd_3"] == 0.0


def test_the_peers_get_the_data_coded_and_are_scored_as_codes(scorer, tmp_path):
    data, sizes = scorer.coded_inputs(tmp_path / "coded")
    assert P.reads_values("dipsy-aim") and not P.reads_values("independent") and not P.reads_values("opendp-mst")
    coded = pd.read_csv(data)
    assert list(coded.columns) == scorer.columns and len(coded) == scorer.rows
    assert P._dipsy_domain(sizes) is None  # a plain map of column sizes, as Adult's
    same = scorer.score(scorer.codes(data, coded=True))
    assert same["tvd_1"] == same["tvd_2"] == same["tvd_3"] == 0.0
    coded["SEX"] = coded["SEX"].sample(frac=1.0, random_state=0).to_numpy()
    coded.to_csv(data, index=False)
    assert scorer.score(scorer.codes(data, coded=True))["tvd_2"] > 0.0


def test_the_coded_copy_never_overwrites_an_input(tmp_path):
    data = tmp_path / "data.csv"
    pd.read_csv(ACS / "national2019.csv").head(200).to_csv(data, index=False)
    s = P.Scorer(data, ACS / "domain.yaml", tmp_path / "three.json")
    before = data.read_bytes()
    with pytest.raises(SystemExit, match="over an input"):
        s.coded_inputs(tmp_path)  # would write tmp_path/data.csv: the data itself
    assert data.read_bytes() == before
