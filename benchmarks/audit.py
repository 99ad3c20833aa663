"""The privacy audit of every registered method, as released and broken (half the noise).

    python benchmarks/audit.py [--draws 20000]

For each method (``dipsy.audit.CASES``), the real release path runs on its worst-case pair D,
recording every measurement; each measurement's privacy loss between its exact answers on D and
D' is computed (exactly, or as a Clopper–Pearson bound from ``draws`` draws) against its stated
cost, the losses are composed against the statement's total, and the release of D' replaying D's
answers is compared with the release of D. Writes build/bench/audit/audit.json and table.md (the
table of docs/privacy/audit.md).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dipsy.audit import CASES, DRAWS, audit, format_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--out", type=Path, default=Path("build/bench/audit"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results, seconds = [], {}
    for method in CASES:
        start = time.perf_counter()
        for broken in (False, True):
            results.append(audit(method, broken=broken, draws=args.draws))
        seconds[method] = time.perf_counter() - start
        print(f"{method}: {seconds[method]:.1f} s", flush=True)
    table = format_table(results)
    (args.out / "table.md").write_text(table + "\n", encoding="utf-8")
    (args.out / "audit.json").write_text(
        json.dumps(
            {"results": [r.to_dict() for r in results], "seconds": seconds, "why": {m: c.why for m, c in CASES.items()}},
            indent=2,
            default=str,
        )
    )
    print(table)


if __name__ == "__main__":
    main()
