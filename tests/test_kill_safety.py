"""A run killed at any stage never leaves a visible release without its spend in the ledger.

Each case runs ``dipsy synth`` in a fresh Python process whose one patched function ends the
process at once (``os._exit``, as a kill would: no ``finally``, no cleanup) just before or just
after a stage of the release path. Then, in this process: if a release folder is visible, the
ledger holds a spend for its release id (a kill may over-count, never under-count); and the next
run into the same folder succeeds (stale temporary folders are swept, not reused as a release).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import CE_DATA, CE_DOMAIN

from dipsy.privacy import Ledger

#: (module, object path, before or after): the stages of a release, in order.
STAGES = [
    ("dipsy.privacy.ledger", "Ledger.reserve", "before"),
    ("dipsy.privacy.ledger", "Ledger.reserve", "after"),
    ("dipsy.privacy.session", "Session.measure", "after"),
    ("dipsy.methods.base", "Model.draw_chunks", "before"),
    ("dipsy.release", "Release.metadata", "after"),
    ("dipsy.release", "_move_into_place", "before"),
    ("dipsy.release", "_move_into_place", "after"),
    ("dipsy.privacy.ledger", "Ledger.confirm", "before"),
    ("dipsy.privacy.ledger", "Ledger.confirm", "after"),
]

DRIVER = textwrap.dedent("""
    import importlib, os, sys
    module, path, when = sys.argv[1:4]
    owner = importlib.import_module(module)
    *outer, name = path.split(".")
    for part in outer:
        owner = getattr(owner, part)
    real = getattr(owner, name)
    def killed(*args, **kwargs):
        if when == "before":
            os._exit(137)
        result = real(*args, **kwargs)
        os._exit(137)
    setattr(owner, name, killed)
    from dipsy.cli import main
    sys.exit(main(sys.argv[4:]))
""")


def synth(out: Path, ledger: Path, *stage: str) -> subprocess.CompletedProcess:
    args = [
        "synth",
        str(CE_DATA),
        "--domain",
        str(CE_DOMAIN),
        "--method",
        "laplace-sanitizer",
        "--columns",
        "Race",
        "--epsilon",
        "1",
        "--out",
        str(out),
        "--ledger",
        str(ledger),
        "--dataset-id",
        "ce",
    ]
    if stage:
        return subprocess.run([sys.executable, "-c", DRIVER, *stage, *args], capture_output=True, text=True, timeout=120)
    return subprocess.run([sys.executable, "-m", "dipsy", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("stage", STAGES, ids=[f"{p}-{w}" for _, p, w in STAGES])
def test_a_kill_never_leaves_a_release_without_its_spend(stage, tmp_path):
    out, ledger = tmp_path / "release", tmp_path / "ledger.sqlite"
    killed = synth(out, ledger, *stage)
    assert killed.returncode == 137, killed.stderr
    if out.exists():  # visible: its spend must be there
        release_id = json.loads((out / "release.json").read_text())["release_id"]
        assert release_id in {s["release_id"] for s in Ledger(ledger).spends("ce")}
    again = synth(out, ledger) if not out.exists() else None
    if again is not None:  # stale temporary folders do not stop the next run
        assert again.returncode == 0, again.stderr
        assert (out / "release.json").exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".release")] == []
