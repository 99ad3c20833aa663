"""dipsy's marginal-based synthesizers and the independent-marginals baseline, in the project venv."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from child import versions as _versions


def synthesize(job: dict) -> pd.DataFrame:
    if job["method"] == "independent":
        return independent(job)
    release = dipsy_call(job["method"], job["data"], job["domain"], job["epsilon"], job["delta"], job["seed"], job["public"])
    return release.tables[0]


def dipsy_call(method: str, data: str, domain: str, epsilon: float, delta: float, seed: int, public: str):
    """The one call into dipsy's API, kept apart so it can follow the API as it settles.

    DPSyn also reads public records of the same columns and encoding, given as the ``public``
    option; ``privsyn-paper`` is privsyn with the paper's settings (shares 0.1/0.1/0.8, γ = 5000,
    GUM's records without dipsy's local search, one merged value for all rare values).
    """
    import dipsy

    options = {
        "dpsyn": {"public": public},
        "privsyn-paper": {"shares": "0.1,0.1,0.8", "gamma": 5000, "search": 0, "runs": 0},
    }.get(method)
    method = "privsyn" if method == "privsyn-paper" else method
    return dipsy.synthesize(data, domain, method=method, epsilon=epsilon, delta=delta, seed=seed, options=options, ledger=False)


def independent(job: dict) -> pd.DataFrame:
    """Every one-way marginal measured with the discrete Gaussian at ρ/d, columns drawn independently.

    (ε, δ) becomes ρ by dipsy's conversion; the d measurements compose to ρ-zCDP (add/remove of one
    row moves each marginal by one in one cell: L2 sensitivity 1). Negative noisy counts become 0.
    """
    from dipsy.privacy import ZCDP
    from dipsy.privacy.conversions import approx_to_zcdp
    from dipsy.privacy.measurement import DiscreteGaussian
    from dipsy.privacy.rng import Randomness

    sizes = json.loads(open(job["domain"]).read())
    data = pd.read_csv(job["data"], usecols=list(sizes))
    noise = DiscreteGaussian.for_budget(ZCDP(approx_to_zcdp(job["epsilon"], job["delta"]) / len(sizes)), 1)
    rand = Randomness.from_seed(job["seed"])
    columns = {}
    for name, size in sizes.items():
        noisy = noise.randomise(np.bincount(data[name].to_numpy(), minlength=size), rand)
        weights = np.clip(noisy, 0, None).astype(float)
        # all counts noised below zero: nothing is known about the column, so draw it uniformly
        p = weights / weights.sum() if weights.sum() > 0 else np.full(size, 1 / size)
        columns[name] = rand.numpy.choice(size, size=job["rows"], p=p)
    return pd.DataFrame(columns)


def write_csv(frame: pd.DataFrame, path) -> None:
    frame.to_csv(path, index=False)


def versions() -> dict[str, str]:
    return _versions("dipsy", "numpy", "pandas", "scipy")
