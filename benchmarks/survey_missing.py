"""Survey files: the ACS excerpt with its income columns, their 'N' declared missing, and its edit rules.

The NIST ACS excerpt (national: examples/acs/, 2019 confidential, 2018 public for dpsyn) is released
by every marginal method at ε = 1, δ = 1e-9 (one seeded set each, ``--seed``; dpsyn by PUMA with the
2018 file public, aim with the 2-way workload: its default of every 3-way marginal of 18 columns
took over 15 minutes), under two domains:

- **with**: examples/acs/domain.yaml as it is: PINCP and POVPIP, integers whose 'N' (under 15; not
  determined in institutional group quarters) is a declared missing code, synthesized as a state of
  its own, and the 16 edit rules, three of them on those columns;
- **without**: the same domain without PINCP and POVPIP (the example as it was before they could
  be declared), 13 rules.

Scored on each release (dipsy.evaluation): records breaking any rule (the goal is 0; enforcement
is post-processing), and how many records the fitted model had put in forbidden cells before
(release.json's ``rules.records``); per column with missing states, the gap between the share of
'N' in the original and in the release (percentage points); the mean 2-way TVD over every pair
of the domain (missing states are cells), and over the pairs the two domains share, so the two
domains compare on the same pairs; and the seconds the release took.

Writes results.json and results.md under --out (default build/bench/survey_missing).
Usage: .venv/bin/python benchmarks/survey_missing.py [--methods privsyn,mst,aim,dpsyn] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

import dipsy
from dipsy.domain import Domain
from dipsy.evaluation.marginals import kway_marginals
from dipsy.evaluation.missing import missing_shares
from dipsy.evaluation.rules import rule_breaks

ROOT = Path(__file__).resolve().parents[1]
ACS = ROOT / "examples" / "acs"
EPSILON, DELTA = 1.0, 1e-9
INCOME = ("PINCP", "POVPIP")
METHODS = ("privsyn", "mst", "aim", "dpsyn")


def domains() -> dict[str, Domain]:
    full = Domain.load(ACS / "domain.yaml")
    return {"with": full, "without": full.project([c for c in full.names if c not in INCOME])}


def release(method: str, domain: Domain, folder: Path, seed: int):
    """One seeded set of ``method`` on the 2019 file's columns of ``domain``."""
    data = folder / f"{domain.name}-{len(domain.names)}.csv"
    public = folder / f"public-{len(domain.names)}.csv"
    if not data.exists():
        for year, path in ((2019, data), (2018, public)):
            frame = pd.read_csv(ACS / f"national{year}.csv", dtype=str, keep_default_na=False)
            frame[list(domain.names)].to_csv(path, index=False)
    options = {"dpsyn": {"public": str(public), "groups": "PUMA"}, "aim": {"workload": "2"}}.get(method, {})
    start = time.perf_counter()
    out = dipsy.synthesize(
        data,
        domain,
        method=method,
        epsilon=EPSILON,
        delta=DELTA,
        seed=seed,
        accept_noise=True,
        options=options,
        ledger=False,
    )
    return out, time.perf_counter() - start, data


def score(out, seconds: float, data: Path, domain: Domain, shared: list[str]) -> dict:
    original = pd.read_csv(data, dtype=str, keep_default_na=False)
    table = out.tables[0].astype(str)
    breaks = rule_breaks(original, [table], domain)
    missing = missing_shares(original, [table], domain)
    two_way = kway_marginals(original, [table], domain, three_way=0)["2-way"]
    common = kway_marginals(original[shared], [table[shared]], domain.project(shared), three_way=0)["2-way"]
    drawn = out.metadata().get("rules", {}).get("records", {})
    return {
        "rows": len(table),
        "seconds": seconds,
        "rules": len(domain.rules),
        "records_breaking_a_rule": breaks["any"]["synthetic"][0],
        "original_breaking_a_rule": breaks["any"]["original"],
        "drawn": drawn.get("examined"),
        "allowed": drawn.get("allowed"),
        "enforcement": drawn,  # release.json's rules.records: drawn, allowed, rejected by each rule
        "missing_gap_points": {c: 100 * v["max_abs_diff"][0] for c, v in missing.items()},
        "missing_original": {c: v["original"] for c, v in missing.items()},
        "missing_release": {c: v["synthetic"][0] for c, v in missing.items()},
        "two_way_tvd": two_way["mean_tvd"],
        "two_way_pairs": two_way.get("count"),
        "two_way_tvd_shared_pairs": common["mean_tvd"],
        # PINCP's 'N' is exactly the under-15s (a rule): its gap is the release's error on their share
        "under_15_share": {
            f: float((pd.to_numeric(t["AGEP"]) < 15).mean()) for f, t in (("original", original), ("release", table))
        },
    }


def markdown(results: dict) -> str:
    lines = [
        f"ACS excerpt (national, 2019; dpsyn's public data 2018), ε = {EPSILON:g}, δ = {DELTA:g}, one seeded set each.",
        "",
        "| method | domain | rules | records breaking a rule | model's draws allowed | 'N' gap PINCP / POVPIP (points) "
        "| 2-way TVD, all pairs | 2-way TVD, shared pairs | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for method, by_domain in results["runs"].items():
        for name, r in by_domain.items():
            gaps = " / ".join(f"{r['missing_gap_points'][c]:.2f}" for c in INCOME) if name == "with" else "—"
            allowed = f"{r['allowed']:,} of {r['drawn']:,}" if r["drawn"] else "—"
            lines.append(
                f"| {method} | {name} | {r['rules']} | {r['records_breaking_a_rule']} | {allowed} | {gaps} "
                f"| {r['two_way_tvd']:.4f} | {r['two_way_tvd_shared_pairs']:.4f} | {r['seconds']:.0f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "bench" / "survey_missing")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    both = domains()
    shared = list(both["without"].names)
    results: dict = {"epsilon": EPSILON, "delta": DELTA, "seed": args.seed, "runs": {}}
    for method in args.methods.split(","):
        for name, domain in both.items():
            out, seconds, data = release(method, domain, args.out, args.seed)
            row = score(out, seconds, data, domain, shared)
            results["runs"].setdefault(method, {})[name] = row
            print(f"{method} {name}: {json.dumps(row)}", flush=True)
            (args.out / "results.json").write_text(json.dumps(results, indent=2))
    (args.out / "results.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
