"""One run of benchmarks/peers.py: the parent starts this file in the tool's own virtual environment.

``python child.py RUN_FOLDER`` reads ``RUN_FOLDER/job.json`` (tool module, data and domain paths,
ε, δ, seed, rows), calls the tool module's ``synthesize``, and writes ``synthetic.csv`` and
``meta.json`` (package versions, seconds inside ``synthesize``, notes) beside it. A tool may also
return other draws from the same fitted model, ``(frame, {name: draw})``: each is written as
``synthetic-<name>.csv`` and timed apart. The parent pins
this process to one core, times it, reads its peak memory and scores the CSV; anything the child
prints goes to the run's log files.
"""

from __future__ import annotations

import importlib
import json
import random
import sys
import time
from pathlib import Path

import numpy


def main() -> None:
    folder = Path(sys.argv[1])
    job = json.loads((folder / "job.json").read_text())
    tool = importlib.import_module(job["module"])
    # Peers take no seed; seeding the global generators they may draw from is the most a caller
    # can do (their noise comes from OpenDP's secure sampler, so their seeds label repetitions).
    random.seed(job["seed"])
    numpy.random.seed(job["seed"])
    start = time.monotonic()
    result = tool.synthesize(job)
    seconds = time.monotonic() - start
    frame, extras = result if isinstance(result, tuple) else (result, {})
    tool.write_csv(frame, folder / "synthetic.csv")
    # other draws from the same fitted model, timed apart so the parent can leave them out of the cost
    start = time.monotonic()
    for name, draw in extras.items():
        tool.write_csv(draw(), folder / f"synthetic-{name}.csv")
    meta = {
        "synthesize_s": seconds,
        "variants_s": time.monotonic() - start,
        "versions": tool.versions(),
        "notes": getattr(tool, "NOTES", {}).get(job["method"], ""),
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def versions(*names: str) -> dict[str, str]:
    """Installed versions of the named distributions (absent ones left out)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    return found


if __name__ == "__main__":
    main()
