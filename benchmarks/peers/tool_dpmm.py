"""dpmm 0.1.9's PrivBayes+PGM, MST and AIM pipelines (``dpmm.pipelines``), at the given (ε, δ).

Each runs as its pipeline ships (``PrivBayesPipeline``, ``MSTPipeline``, ``AIMPipeline`` with
``epsilon`` and ``delta`` and otherwise their defaults: domain compression on, no model-size cap
for AIM, whose workload is every 2-way marginal of at most 10,000 cells) but for two things:

- the public domain: the data are already integer codes, so the pipeline's preprocessing (a
  PrivTree binner with its own ``proc_epsilon = 0.1`` *on top of* ε for numeric columns, and a
  fit on the data for the rest) is switched off (``disable_processing=True``) and the generator
  gets every column's size from the domain file: no budget goes to preprocessing and nothing about
  the domain is read from the private rows. (Without a domain dpmm would take each column's
  maximum from the data, which it flags as a privacy leak.)
- one worker: ``n_jobs=1``, as the run holds one core (its default is the machine's cores less one,
  through ``multiprocessing``).

dpmm converts (ε, δ) to ρ itself (private-pgm's ``cdp_rho``): MST and AIM spend all of ρ on
Gaussian measurements and exponential-mechanism selections; PrivBayes spends ε/2 on its pure-DP
exponential-mechanism structure search and measures its cliques with the ρ of (ε/2, δ). Its
noise comes from OpenDP's samplers; the seed goes to the pipeline's ``random_state`` (selection
and sampling) and labels repetitions. Records are the pipeline's ``generate``: mbi's sampler, as
vendored in dpmm. The privacy unit is one row.
"""

from __future__ import annotations

import json

import pandas as pd
from child import versions as _versions

NOTES = {
    "privbayes": "dpmm PrivBayesPipeline defaults (degree 2), public domain, preprocessing off, n_jobs=1",
    "mst": "dpmm MSTPipeline defaults, public domain, preprocessing off, n_jobs=1",
    "aim": "dpmm AIMPipeline defaults (2-way workload, no model-size cap), public domain, preprocessing off, n_jobs=1",
}


def synthesize(job: dict) -> pd.DataFrame:
    from dpmm.pipelines import AIMPipeline, MSTPipeline, PrivBayesPipeline

    pipeline = {"privbayes": PrivBayesPipeline, "mst": MSTPipeline, "aim": AIMPipeline}[job["method"]]
    sizes = json.loads(open(job["domain"]).read())
    data = pd.read_csv(job["data"])[list(sizes)].astype("int64")
    model = pipeline(epsilon=float(job["epsilon"]), delta=float(job["delta"]), n_jobs=1, disable_processing=True)
    model.fit(data, domain=dict(sizes), random_state=job["seed"])
    frame = model.generate(n_records=job["rows"], random_state=job["seed"])
    return frame[list(sizes)]


def write_csv(frame: pd.DataFrame, path) -> None:
    frame.to_csv(path, index=False)


def versions() -> dict[str, str]:
    return _versions("dpmm", "opendp", "numpy", "pandas", "scipy")
