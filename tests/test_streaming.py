"""Releases drawn and written chunk by chunk: the same records as in memory, bounded by a chunk."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN

import dipsy
from dipsy.cli import main
from dipsy.errors import DataError, DipsyError, ReleaseError
from dipsy.methods import base
from dipsy.methods.counts import counts_to_chunks, counts_to_codes
from dipsy.release_sets import read_set

COLUMNS = ["UrbanRural", "Race", "Income"]  # two categorical columns and a binned number (decoded with draws)


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(frame.columns), kind="stable").reset_index(drop=True)


def test_chunks_hold_the_counts_and_one_chunk_is_the_whole_shuffle():
    counts = np.array([5, 0, 7, 1, 9])
    parts = list(counts_to_chunks(counts, ("a",), (5,), np.random.default_rng(3), rows=4))
    assert [len(p["a"]) for p in parts] == [4, 4, 4, 4, 4, 2]
    assert np.bincount(np.concatenate([p["a"] for p in parts]), minlength=5).tolist() == counts.tolist()
    [whole] = counts_to_chunks(counts, ("a",), (5,), np.random.default_rng(3), rows=22)
    assert np.array_equal(whole["a"], counts_to_codes(counts, ("a",), (5,), np.random.default_rng(3))["a"])


def test_chunk_order_is_a_uniform_shuffle():
    """Where the single record of cell 0 lands among 3 chunks of 2 is uniform (chi-square, 3000 draws)."""
    from scipy.stats import chisquare

    rng = np.random.default_rng(11)
    where = np.zeros(6, int)
    for _ in range(3000):
        flat = np.concatenate([p["a"] for p in counts_to_chunks(np.array([1, 5]), ("a",), (2,), rng, rows=2)])
        where[int(np.flatnonzero(flat == 0)[0])] += 1
    assert chisquare(where).pvalue > 1e-3
    assert where.min() > 350  # and the test has power: a record stuck in one chunk gives 0 elsewhere


@pytest.mark.parametrize("partition_by", [(), ("UrbanRural",)])
def test_streamed_release_equals_the_in_memory_release(tmp_path, monkeypatch, partition_by):
    monkeypatch.setattr(base, "CHUNK_ROWS", 300)  # 994 records: four chunks
    kwargs = dict(epsilon=5.0, sets=2, columns=COLUMNS, seed=7, accept_noise=True)
    memory = dipsy.synthesize(CE_DATA, CE_DOMAIN, ledger=tmp_path / "a.sqlite", **kwargs)
    out = tmp_path / "streamed"
    streamed = dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        ledger=tmp_path / "b.sqlite",
        stream=True,
        on_release=lambda r: r.save(out, partition_by=partition_by),
        **kwargs,
    )
    meta = json.loads((out / "release.json").read_text())
    assert meta["rows"] == [994, 994] == [len(t) for t in streamed.tables]
    for k, table in enumerate(memory.tables, start=1):
        folder = out / f"synthetic_{k}"
        parts = sorted(p.name for p in folder.rglob("part-*"))
        assert len(parts) == (4 if not partition_by else 4 * 2)  # two UrbanRural values in each chunk
        back = pd.concat(list(read_set(folder, memory.domain)), ignore_index=True)
        if not partition_by:
            pd.testing.assert_frame_equal(back, table)  # same records, same order
        else:
            pd.testing.assert_frame_equal(_sorted(back), _sorted(table), check_dtype=False)
            assert back["UrbanRural"].dtype == table["UrbanRural"].dtype


def test_a_streamed_set_is_drawn_once(tmp_path):
    release = dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        epsilon=5.0,
        columns=["Race"],
        seed=1,
        ledger=tmp_path / "l.sqlite",
        stream=True,
        on_release=lambda r: r.save(tmp_path / "rel"),
    )
    with pytest.raises(ReleaseError, match="only once"):
        release.save(tmp_path / "again")
    with pytest.raises(DipsyError, match="on_release"):
        dipsy.synthesize(CE_DATA, CE_DOMAIN, epsilon=5.0, columns=["Race"], seed=1, stream=True, ledger=tmp_path / "l.sqlite")


def test_reading_a_set_checks_every_chunk(tmp_path):
    release = dipsy.synthesize(
        CE_DATA, CE_DOMAIN, epsilon=5.0, columns=["Race", "UrbanRural"], seed=1, ledger=tmp_path / "l.sqlite"
    )
    with pytest.raises(ReleaseError, match="no column"):
        release.save(tmp_path / "rel", partition_by=("Race", "UrbanRural"))
    release.save(tmp_path / "rel", partition_by=("Race",))
    domain = dipsy.Domain.load(tmp_path / "rel" / "domain.yaml")
    assert sum(len(c) for c in read_set(tmp_path / "rel" / "synthetic_1", domain)) == 994
    bad = next((tmp_path / "rel" / "synthetic_1").iterdir())
    bad.rename(bad.with_name("Race=9"))  # a category the domain does not have
    with pytest.raises(DataError, match="names no value|does not allow"):
        list(read_set(tmp_path / "rel" / "synthetic_1", domain))


def test_cli_streams_partitions_evaluates_and_overwrites(tmp_path, capsys):
    out = tmp_path / "rel"
    args = [
        "synth",
        CE_DATA,
        "--domain",
        CE_DOMAIN,
        "--epsilon",
        "5",
        "--columns",
        ",".join(COLUMNS),
        "--seed",
        "2",
        "--stream",
        "--partition-by",
        "Race",
        "--accept-noise",
        "--out",
        out,
        "--ledger",
        tmp_path / "l.sqlite",
    ]
    assert main([str(a) for a in args]) == 0, capsys.readouterr().err
    assert {p.name.split("=")[0] for p in (out / "synthetic_1").iterdir()} == {"Race"}
    assert main([str(a) for a in [*args, "--overwrite"]]) == 0, capsys.readouterr().err  # a set folder is a release file
    assert main(["evaluate", str(CE_DATA), str(out), "--json", str(tmp_path / "m.json")]) == 0, capsys.readouterr().err
    (out / "synthetic_1" / "notes.txt").write_text("mine")
    assert main([str(a) for a in [*args, "--overwrite"]]) == 2  # something dipsy did not write: refused
    assert "also holds synthetic_1" in capsys.readouterr().err


def test_partitioning_by_a_number_is_refused(tmp_path, capsys):
    code = main(
        [
            str(a)
            for a in [
                "synth",
                CE_DATA,
                "--domain",
                CE_DOMAIN,
                "--epsilon",
                "5",
                "--columns",
                "Income",
                "--partition-by",
                "Income",
                "--out",
                tmp_path / "rel",
                "--ledger",
                tmp_path / "l.sqlite",
            ]
        ]
    )
    assert code == 2 and "not categorical" in capsys.readouterr().err and not (tmp_path / "rel").exists()


@pytest.mark.parametrize("method", ["aim", "mst"])
def test_a_graphical_model_streams_chunk_by_chunk(tmp_path, monkeypatch, method):
    """aim's and mst's records are i.i.d. from the fitted model: drawn a chunk at a time (four
    part files for 1,000 records in chunks of 300), the same records as the in-memory release."""
    monkeypatch.setattr(base, "CHUNK_ROWS", 300)
    kwargs = dict(method=method, epsilon=5.0, delta=1e-6, columns=COLUMNS, seed=7, accept_noise=True, options={"rows": 1000})
    memory = dipsy.synthesize(CE_DATA, CE_DOMAIN, ledger=tmp_path / "a.sqlite", **kwargs)
    out = tmp_path / "streamed"
    dipsy.synthesize(CE_DATA, CE_DOMAIN, ledger=tmp_path / "b.sqlite", stream=True, on_release=lambda r: r.save(out), **kwargs)
    folder = out / "synthetic_1"
    assert len(list(folder.rglob("part-*"))) == 4
    back = pd.concat(list(read_set(folder, memory.domain)), ignore_index=True)
    pd.testing.assert_frame_equal(back, memory.tables[0])
