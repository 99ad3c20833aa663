"""The NIST challenge's view: marginal methods scored inside each PUMA on the NIST ACS excerpts.

For each region of the NIST ACS Data Excerpts (national: 20 PUMAs, tx: 6, ma: 5), the 2019 file is
the confidential data and the 2018 file the public one (dpsyn reads it; for the others only its
PUMA codes enter the domain, as in examples/acs/domain.yaml, whose other columns every region
shares). Each method releases one seeded set at ε ∈ {1, 10}, δ = 1e-9, and is scored:

- inside each PUMA: the 3-way k-marginal score, 1000 · (1 − mean TVD) of 64 seeded 3-way marginals
  of the other columns, averaged over PUMAs (:func:`dipsy.evaluation.groups.grouped_kmarginal`),
  with the worst PUMA;
- over the whole file: the mean 2-way TVD;
- beside a 10 % subsample of the original scored the same way (what a non-private sample reaches).

Writes results.json and results.md under --out (default build/bench/groups).
Usage: .venv/bin/python benchmarks/groups.py [--methods dpsyn,privsyn,mst] [--epsilons 1,10] [--regions national,tx,ma]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

import dipsy
from dipsy.domain import Domain
from dipsy.evaluation import read_original
from dipsy.evaluation.groups import grouped_kmarginal
from dipsy.evaluation.marginals import kway_marginals

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "nist_acs_excerpts"
DOMAIN = ROOT / "examples" / "acs" / "domain.yaml"
DELTA = 1e-9
SEED = 0


def region_domain(region: str) -> Domain:
    """The national domain with the region's PUMA codes and names, from its public 2018 file and mappings.json."""
    spec = Domain.load(DOMAIN).to_dict()
    names = json.loads((DATA / "mappings.json").read_text())["PUMA"]
    codes = sorted(pd.read_csv(DATA / f"{region}2018.csv", usecols=["PUMA"], dtype=str)["PUMA"].unique())
    spec["name"] = f"acs-{region}"
    spec["columns"]["PUMA"] |= {"categories": codes, "labels": [names.get(c, {}).get("name", c) for c in codes]}
    # The 13 columns measured in docs/benchmarks/index.md: the income columns (benchmarks/survey_missing.py) left out.
    full = Domain.from_dict(spec)
    return full.project([c for c in full.names if c not in ("PINCP", "POVPIP")])


def score(original: pd.DataFrame, tables: list[pd.DataFrame], domain: Domain) -> dict:
    by_group = grouped_kmarginal(original, tables, domain, ["PUMA"], k=3, marginals=64, seed=SEED)
    two = kway_marginals(original, tables, domain, three_way=0, seed=SEED)["2-way"]["mean_tvd"]
    worst = by_group["worst"][0]
    return {
        "puma_score": by_group["score"],
        "pumas": by_group["groups_scored"],
        "worst_puma": worst["group"]["PUMA"],
        "worst_score": worst["score"],
        "two_way_tvd": two,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="dpsyn,privsyn,mst")
    parser.add_argument("--epsilons", default="1,10")
    parser.add_argument("--regions", default="national,tx,ma")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "bench" / "groups")
    args = parser.parse_args(argv)
    rows = []
    for region in args.regions.split(","):
        domain = region_domain(region)
        private, public = DATA / f"{region}2019.csv", DATA / f"{region}2018.csv"
        original = read_original(private, domain)
        sample = original.sample(frac=0.1, random_state=SEED)
        rows.append(
            {"region": region, "method": "10 % subsample", "epsilon": None, "seconds": 0.0, **score(original, [sample], domain)}
        )
        for method in args.methods.split(","):
            for eps in (float(e) for e in args.epsilons.split(",")):
                options = {"public": str(public), "groups": "PUMA"} if method == "dpsyn" else {}
                start = time.perf_counter()
                release = dipsy.synthesize(
                    private,
                    domain,
                    method=method,
                    epsilon=eps,
                    delta=DELTA,
                    seed=SEED,
                    options=options,
                    accept_noise=True,
                    ledger=False,
                )
                seconds = time.perf_counter() - start
                rows.append(
                    {
                        "region": region,
                        "method": method,
                        "epsilon": eps,
                        "seconds": seconds,
                        **score(original, release.tables, domain),
                    }
                )
                print(
                    f"{region} {method} ε={eps:g}: PUMA 3-way score {rows[-1]['puma_score']:.1f}, "
                    f"2-way TVD {rows[-1]['two_way_tvd']:.4f} ({seconds:.1f} s)",
                    flush=True,
                )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "| region | method | ε | PUMAs | 3-way score inside PUMAs (mean) | worst PUMA (score) | 2-way TVD | synth s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        eps = "—" if r["epsilon"] is None else f"{r['epsilon']:g}"
        lines.append(
            f"| {r['region']} | {r['method']} | {eps} | {r['pumas']} | {r['puma_score']:.1f} | "
            f"{r['worst_puma']} ({r['worst_score']:.1f}) | {r['two_way_tvd']:.4f} | {r['seconds']:.1f} |"
        )
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
