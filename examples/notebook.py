# %% [markdown]
# # A release from a notebook
#
# Cells in the percent format (VS Code, Jupytext, Spyder open them as a notebook; `python
# examples/notebook.py` runs them all). The data are the CE excerpt bundled with dipsy; the
# release is recorded in the budget ledger the command line uses (`$DIPSY_LEDGER`, else the
# user's data folder). The tests run this file.

# %%
from pathlib import Path

import dipsy

HERE = Path(__file__).resolve().parent
data, domain = HERE / "ce" / "CEdata.csv", HERE / "ce" / "domain.yaml"

# %% [markdown]
# Configure, then fit: the fit is the one charge. Two sets at ε = 4 in all (2 each), two columns.

# %%
synth = dipsy.Synthesizer("dirichlet-multinomial", epsilon=4.0, sets=2, columns=["Race", "UrbanRural"], dataset_id="ce-notebook")
synth.fit(data, domain)
claim = synth.release.statement.claim()
print(claim["definition"], claim["epsilon_total"], "over", claim["sets"], "sets;", claim["neighbouring"])

# %% [markdown]
# Each `sample()` is one of the sets the fit paid for; a third would be another charge, so it is refused.

# %%
first = synth.sample()
second = synth.sample()
print(first.value_counts(normalize=True).head())

# %% [markdown]
# The report compares the release with the data it was fitted on (it reads them: keep it with them).

# %%
out = Path("build") / "notebook"
out.mkdir(parents=True, exist_ok=True)
metrics = synth.report(out / "report.html")
print(metrics["verdicts"]["marginals"]["text"])
