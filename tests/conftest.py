"""Shared fixtures: no test touches the user's real budget ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CE_DATA = ROOT / "examples" / "ce" / "CEdata.csv"
CE_DOMAIN = ROOT / "examples" / "ce" / "domain.yaml"


@pytest.fixture(autouse=True)
def private_ledger(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DIPSY_LEDGER", str(path))
    return path
