"""synthcity 0.2.12's differentially private plugins (``Plugins(categories=["privacy"])``), as shipped.

Of its "privacy" plugins four take a privacy budget and are run here at their defaults with the
run's ``epsilon`` (and ``delta`` where they take one), ``random_state`` = the seed and
``device="cpu"``: ``aim`` (a vendored copy of private-pgm's AIM, its workload every 2-way marginal
of at most 1,000 cells), ``privbayes`` (pure ε-DP: ε/2 to the network, ε/2 to the conditionals; no
δ), ``dpgan`` (DP-SGD through Opacus, 2,000 epochs at most) and ``pategan`` (PATE teachers).
``adsgan`` and ``decaf`` sit in the same category but take no budget: they are not DP.

synthcity cannot take a public domain. Every plugin reads the columns' values from the private
rows before it spends any budget, outside its DP accounting: the base ``Plugin.fit`` builds a
schema (each column's observed values or range) and label-encodes each column's observed values,
and ``aim`` takes each column's size as its number of distinct values in the data. So the codes go in
as text labels (categories, which synthcity maps to 0..k-1 over the observed values and back); as
integers the plugins would treat most columns as numbers, and ``aim``'s histograms would fold a
code equal to the number of distinct values into the cell below and drop higher ones (age runs
1..74 with 74 values, fnlwgt 0..99 with 77). Other departures from the stated (ε, δ), all as shipped and not corrected here:

- ``generate`` keeps only rows inside the schema learnt from the data and drops duplicate rows
  (``strict=True``), and draws again until it has n rows; for ``aim`` each draw reruns the whole
  mechanism on the private data (``TabularAIM.generate`` calls ``AIM.run``), a fresh (ε, δ) each
  time;
- ``pategan`` ignores the ``delta`` it is given and uses 1/(n·√n) (about 9e-8 on Adult);
- ``dpgan`` stops early on a detection score computed on the private rows, outside its accounting.

And ``aim``'s records come out uniform: its copy of mbi's ``FactoredInference.mirror_descent``
swapped private-pgm's step-size closure (twice the last accepted step) for a constant 2/n², so
the estimate hardly leaves its uniform start (docs/benchmarks/peers.md).

The privacy unit is one row. synthcity pins torch < 2.3; PyPI's Linux wheel of it is the CUDA build,
which runs on the CPU here.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
from child import versions as _versions

#: plugin -> whether it takes a delta
TAKES_DELTA = {"aim": True, "privbayes": False, "dpgan": True, "pategan": True}
NOTES = {
    "aim": "synthcity defaults; domain read from the data (no public domain); each draw reruns AIM; "
    "its mbi copy's fixed step leaves the model uniform",
    "privbayes": "synthcity defaults, pure ε-DP; domain read from the data (no public domain)",
    "dpgan": "synthcity defaults; domain read from the data; early stopping on the private rows",
    "pategan": "synthcity defaults; domain read from the data; delta ignored, 1/(n√n) used",
}


def synthesize(job: dict) -> pd.DataFrame:
    from synthcity.plugins import Plugins

    sizes = json.loads(open(job["domain"]).read())
    data = pd.read_csv(job["data"])[list(sizes)].astype(str)  # categories: see the module docstring
    options = {"epsilon": float(job["epsilon"]), "random_state": job["seed"], "device": "cpu"}
    if TAKES_DELTA[job["method"]]:
        options["delta"] = float(job["delta"])
    workspace = Path(tempfile.mkdtemp(prefix="synthcity-"))  # its cache, kept out of the working folder
    plugin = Plugins(categories=["privacy"]).get(job["method"], workspace=workspace, **options)
    plugin.fit(data)
    frame = plugin.generate(count=job["rows"], random_state=job["seed"]).dataframe()
    return frame[list(sizes)].astype("int64")


def write_csv(frame: pd.DataFrame, path) -> None:
    frame.to_csv(path, index=False)


def versions() -> dict[str, str]:
    return _versions("synthcity", "torch", "opacus", "numpy", "pandas")
