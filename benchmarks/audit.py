"""The end-to-end privacy audit of every registered method, as released and broken (half the noise).

    python benchmarks/audit.py [--runs 2000]

Each method's real release path runs ``runs`` times on each of its worst-case neighbouring data sets
(``dipsy.privacy.e2e.CASES``); the table gives the claimed ε beside the Clopper–Pearson lower bound
(95 %) on the privacy loss found. The marginal methods are slower per release (GUM, swaps): they run
fewer times. Writes build/bench/audit/audit.json and table.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dipsy.privacy.e2e import CASES, audit, format_table

#: Runs for the slow methods (a release of privsyn or dpsyn takes 20–250 ms here).
SLOW = {"privsyn": 600, "dpsyn": 300}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=Path("build/bench/audit"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results, seconds = [], {}
    for method in CASES:
        start = time.perf_counter()
        for broken in (False, True):
            results.append(audit(method, runs=min(args.runs, SLOW.get(method, args.runs)), broken=broken))
        seconds[method] = time.perf_counter() - start
        print(f"{method}: {seconds[method]:.1f} s", flush=True)
    table = format_table(results)
    (args.out / "table.md").write_text(table + "\n", encoding="utf-8")
    (args.out / "audit.json").write_text(json.dumps({"results": [r.to_dict() for r in results], "seconds": seconds,
                                                     "why": {m: c.why for m, c in CASES.items()}}, indent=2, default=str))
    print(table)


if __name__ == "__main__":
    main()
