"""Releases through the Spark engine: the same records as through DuckDB, written by Spark.

The Spark engine's queries are checked one by one in ``test_spark_engine.py``; here whole releases:
DPSyn's noisy PUMA counts (a grouped measurement, aggregated by Spark over the groups) and a
streamed release that Spark writes as partitioned Parquet.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import CE_DATA, CE_DOMAIN, skip_without_spark

skip_without_spark("Spark release tests")

import dipsy  # noqa: E402
from dipsy.cli import main  # noqa: E402
from dipsy.methods import base  # noqa: E402
from dipsy.release_sets import read_set  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ACS = ROOT / "examples" / "acs"


@pytest.fixture(autouse=True)
def _session(spark):
    """Every test here runs with the worker's Spark session started (conftest.spark)."""


def _every_fourth(path: Path, folder: Path) -> Path:
    """The header and every fourth record (one line each) of the CSV file ``path``, as a file in ``folder``."""
    with open(path, encoding="utf-8") as f:
        header, *records = f.readlines()
    out = folder / path.name
    out.write_text(header + "".join(records[::4]), encoding="utf-8")
    return out


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(frame.columns), kind="stable").reset_index(drop=True)


def test_dpsyn_per_puma_through_spark_is_the_duckdb_release(tmp_path):
    # Every fourth record of the two files (sorted by PUMA): all 20 PUMAs, a quarter of the rows to
    # read, validate, aggregate and fit, twice.
    private, public = (_every_fourth(ACS / name, tmp_path) for name in ("national2019.csv", "national2018.csv"))
    kwargs = dict(
        epsilon=1.0,
        delta=1e-9,
        columns=["PUMA", "SEX", "AGEP", "RAC1P"],
        seed=3,
        options={"public": str(public), "groups": "PUMA"},
    )
    duck = dipsy.synthesize(private, ACS / "domain.yaml", "dpsyn", ledger=tmp_path / "a.sqlite", **kwargs)
    spark = dipsy.synthesize(private, ACS / "domain.yaml", "dpsyn", ledger=tmp_path / "b.sqlite", engine="spark", **kwargs)
    assert duck.parameters["group_sizes"] == spark.parameters["group_sizes"] and len(duck.parameters["group_sizes"]) > 1
    pd.testing.assert_frame_equal(duck.tables[0], spark.tables[0])


def test_a_streamed_release_written_by_spark_holds_the_in_memory_records(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "CHUNK_ROWS", 400)  # 994 records: three chunks, each appended by Spark
    kwargs = dict(epsilon=5.0, columns=["UrbanRural", "Race", "Income"], seed=4, accept_noise=True)
    memory = dipsy.synthesize(CE_DATA, CE_DOMAIN, ledger=tmp_path / "a.sqlite", **kwargs)
    out = tmp_path / "rel"
    dipsy.synthesize(
        CE_DATA,
        CE_DOMAIN,
        ledger=tmp_path / "b.sqlite",
        engine="spark",
        stream=True,
        on_release=lambda r: r.save(out, partition_by=("Race",), engine="spark"),
        **kwargs,
    )
    folder = out / "synthetic_1"
    assert {p.name.split("=")[0] for p in folder.iterdir()} == {"Race"}
    assert not [p for p in folder.rglob("*") if p.name.endswith(".crc") or p.name == "_SUCCESS"]
    back = pd.concat(list(read_set(folder, memory.domain)), ignore_index=True)
    pd.testing.assert_frame_equal(_sorted(back), _sorted(memory.tables[0]), check_dtype=False)
    assert json.loads((out / "release.json").read_text())["rows"] == [994]


def test_cli_engine_spark(tmp_path, capsys):
    out = tmp_path / "rel"
    args = [
        "synth",
        CE_DATA,
        "--domain",
        CE_DOMAIN,
        "--epsilon",
        "5",
        "--columns",
        "Race,UrbanRural",
        "--seed",
        "1",
        "--engine",
        "spark",
        "--stream",
        "--partition-by",
        "UrbanRural",
        "--out",
        out,
        "--ledger",
        tmp_path / "l.sqlite",
    ]
    assert main([str(a) for a in args]) == 0, capsys.readouterr().err
    assert main([str(a) for a in [*args, "--overwrite"]]) == 0, capsys.readouterr().err  # Spark's files are release files
    assert main(["domain", "check", str(CE_DATA), "--domain", str(CE_DOMAIN), "--engine", "spark"]) == 0
