"""Shared fixtures: no test touches the user's real budget ledger, nor the record of the ledgers dipsy created."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CE_DATA = ROOT / "examples" / "ce" / "CEdata.csv"
CE_DOMAIN = ROOT / "examples" / "ce" / "domain.yaml"


def skip_without_spark(what: str) -> None:
    """Skip the calling test module, saying why, unless pyspark and a Java runtime are installed."""
    from dipsy.engine.spark_engine import require_spark
    from dipsy.errors import DataError

    try:
        require_spark()
    except DataError as e:
        pytest.skip(f"{what}: {e}", allow_module_level=True)


@pytest.fixture(autouse=True)
def private_ledger(tmp_path, tmp_path_factory, monkeypatch):
    """The default ledger in the test's own folder, and the record of the ledgers dipsy created in a
    folder of the test's own beside it."""
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DIPSY_LEDGER", str(path))
    monkeypatch.setenv("DIPSY_CONFIG_DIR", str(tmp_path_factory.mktemp("dipsy-config")))
    return path
