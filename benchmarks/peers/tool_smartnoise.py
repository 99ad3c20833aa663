"""SmartNoise Synth's MST and AIM (``snsynth``), run as shipped at the given (ε, δ).

The data are already integer codes over a public domain, so each column gets a label transformer
fitted on the domain's codes rather than on the data: no budget goes to preprocessing and no code
is learnt from the private rows. SmartNoise converts (ε, δ) to ρ itself and samples through mbi.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from child import versions as _versions


def synthesize(job: dict) -> pd.DataFrame:
    from snsynth import Synthesizer

    sizes = json.loads(open(job["domain"]).read())
    data = pd.read_csv(job["data"])[list(sizes)]
    synth = Synthesizer.create(job["method"], epsilon=float(job["epsilon"]), delta=job["delta"])
    synth.fit(data, transformer=domain_transformer(sizes))
    frame = synth.sample(job["rows"])
    return frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame, columns=list(sizes))


def domain_transformer(sizes: dict[str, int]):
    """One label transformer per column, fitted on every code 0..size-1 of the public domain."""
    from snsynth.transform import LabelTransformer, TableTransformer

    width = max(sizes.values())
    codes = pd.DataFrame({name: np.arange(width) % size for name, size in sizes.items()})
    transformer = TableTransformer([LabelTransformer(nullable=False) for _ in sizes])
    transformer.fit(codes)
    return transformer


def write_csv(frame: pd.DataFrame, path) -> None:
    frame.to_csv(path, index=False)


def versions() -> dict[str, str]:
    return _versions("smartnoise-synth", "mbi", "opendp", "jax", "numpy", "pandas")
