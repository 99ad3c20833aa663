# The first two targets are the README's first two commands: `make demo` and `make test`.
# Each creates .venv when absent and installs the project with its dependencies from PyPI (with uv).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO := build/demo

.PHONY: demo test check docs bench bench-peers bench-scale clean

# uv resolves and installs the dependencies in about half of pip's time (49 s against 104 s on a
# clean clone), and compiles no bytecode: Python writes it on first import (see test:). PySpark comes
# from PyPI as source only: its wheel, 436 MB of jars, is built here, and stored uncompressed it
# builds in 16 s instead of 34 (the jars are compressed already).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet 'uv>=0.13'
	$(BIN)/uv pip install --quiet --python $(BIN)/python --config-settings-package 'pyspark:--build-option=--compression=stored' \
		-e '.[test,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dipsy synth examples/ce/CEdata.csv --domain examples/ce/domain.yaml \
		--method dirichlet-multinomial --columns Race --epsilon 5 \
		--out $(DEMO)/ce-race --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id ce-demo
	$(BIN)/python examples/compare.py examples/ce/CEdata.csv $(DEMO)/ce-race
	$(BIN)/dipsy synth examples/ct_deaths/deaths.csv --domain examples/ct_deaths/domain.yaml \
		--method gamma-poisson --columns county --epsilon 1 \
		--option exposures=examples/ct_deaths/populations.csv --on-invalid drop --release table --accept-noise \
		--out $(DEMO)/ct-deaths --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id ct-deaths-demo
	$(BIN)/python examples/compare.py examples/ct_deaths/deaths.csv $(DEMO)/ct-deaths
	$(BIN)/dipsy synth examples/ce/CEdata.csv --domain examples/ce/domain.yaml \
		--method dirichlet-multinomial --epsilon 10 \
		--out $(DEMO)/ce-all --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id ce-demo
	$(BIN)/dipsy budget show --ledger $(DEMO)/ledger.sqlite
	$(BIN)/dipsy evaluate examples/ce/CEdata.csv $(DEMO)/ce-all \
		--formula 'Expenditure ~ Income + C(UrbanRural)' \
		--report $(DEMO)/ce-report.html --json $(DEMO)/ce-metrics.json
	# ACS as CSV: its income columns hold the code 'N' among numbers, which Parquet cannot store as they are
	$(BIN)/dipsy synth examples/acs/national2019.csv --domain examples/acs/domain.yaml \
		--method dpsyn --epsilon 1 --delta 1e-9 \
		--option public=examples/acs/national2018.csv --option groups=PUMA --format csv \
		--out $(DEMO)/acs-dpsyn --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id acs-2019-demo
	$(BIN)/dipsy synth examples/acs/national2019.csv --domain examples/acs/domain.yaml \
		--method privsyn --epsilon 1 --delta 1e-9 --format csv \
		--out $(DEMO)/acs-privsyn --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id acs-2019-demo
	$(BIN)/dipsy budget show --ledger $(DEMO)/ledger.sqlite --dataset-id acs-2019-demo
	$(BIN)/dipsy evaluate examples/acs/national2019.csv $(DEMO)/acs-dpsyn --groups PUMA --report $(DEMO)/acs-dpsyn-report.html
	$(BIN)/dipsy evaluate examples/acs/national2019.csv $(DEMO)/acs-privsyn --groups PUMA --report $(DEMO)/acs-privsyn-report.html
	$(BIN)/dipsy synth examples/adult/priv.csv --domain examples/adult/domain.yaml \
		--method rdt --epsilon 4 --option structure=examples/adult/pub.csv --option structure_weight=10 \
		--out $(DEMO)/adult-rdt --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id adult-demo
	$(BIN)/dipsy evaluate examples/adult/priv.csv $(DEMO)/adult-rdt --report $(DEMO)/adult-rdt-report.html
	# Partial synthesis: Income and UrbanRural are released as they are, so its domain declares them public
	$(BIN)/dipsy synth examples/ce/CEdata.csv --domain examples/ce/partial.yaml \
		--method pseudo-posterior --sets 5 --option 'response=log(Expenditure)' --option 'predictors=log(Income),UrbanRural' \
		--option range=0.6,1.2 --option standard=averaged \
		--out $(DEMO)/ce-ppm --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id ce-demo
	$(BIN)/dipsy evaluate examples/ce/CEdata.csv $(DEMO)/ce-ppm \
		--formula 'np.log(Expenditure) ~ np.log(Income) + C(UrbanRural)' --report $(DEMO)/ce-ppm-report.html
	# DP methods on the same column at ε = 1.5 (a DP ε is a different kind of guarantee from the local ε_x above);
	# the forecast calls modips and the smoothed histogram noise here: --accept-noise shows how right it is
	$(BIN)/dipsy synth examples/ce/CEdata.csv --domain examples/ce/domain.yaml --columns Expenditure,Income,UrbanRural \
		--method modips --sets 5 --epsilon 1.5 --accept-noise --out $(DEMO)/ce-modips --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id ce-demo
	$(BIN)/dipsy synth examples/ce/CEdata.csv --domain examples/ce/domain.yaml --columns Expenditure \
		--method perturbed-histogram --sets 5 --epsilon 1.5 --out $(DEMO)/ce-hist --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id ce-demo
	$(BIN)/dipsy synth examples/ce/CEdata.csv --domain examples/ce/domain.yaml --columns Expenditure \
		--method smoothed-histogram --epsilon 1.5 --accept-noise --out $(DEMO)/ce-smooth --overwrite --ledger $(DEMO)/ledger.sqlite --dataset-id ce-demo
	$(BIN)/dipsy compare examples/ce/CEdata.csv $(DEMO)/ce-ppm $(DEMO)/ce-modips $(DEMO)/ce-hist $(DEMO)/ce-smooth \
		--column Expenditure --report $(DEMO)/ce-expenditure-compare.html --json $(DEMO)/ce-expenditure-compare.json

# The report's browser test needs Chromium: installed from Debian's packages where this runs as
# root with apt-get; elsewhere the test is skipped with a message.
test: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		echo "installing Chromium for the report's browser test" && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
		echo "Chromium is not installed: the browser test of the report will be skipped"
	@# Where PYTHONDONTWRITEBYTECODE is set, every process would compile pandas, SciPy and dipsy from
	@# source (import dipsy.cli: 4.1 s instead of 1.9 s), and many tests start dipsy in a new process.
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n auto --dist loadfile

bench: $(STAMP)
	$(BIN)/python benchmarks/dirichlet_multinomial.py
	$(BIN)/python benchmarks/md_scale.py
	$(BIN)/python benchmarks/noise.py
	$(BIN)/python benchmarks/privacy_audit.py
	$(BIN)/python benchmarks/audit.py
	$(BIN)/python benchmarks/bowen_liu.py
	$(BIN)/python benchmarks/rdt.py
	$(BIN)/python benchmarks/pseudo_posterior.py
	$(BIN)/python benchmarks/forecast.py
	$(BIN)/python benchmarks/marginal_coverage.py --jobs 2
	$(BIN)/python benchmarks/marginal_coverage.py --jobs 2 --methods privsyn,mst --declare "Y ~ E; B ~ E; Y ~ E * S" \
		--out build/bench/marginal_coverage_declared
	$(BIN)/python benchmarks/groups.py

# Hours of CPU: dipsy beside SmartNoise and OpenDP on Adult (each peer in its own venv, made here),
# then DPSyn with Adult's public/private split.
bench-peers: $(STAMP)
	$(BIN)/python benchmarks/peers.py --jobs 2
	$(BIN)/python benchmarks/peers.py --jobs 2 --tools independent dipsy-privsyn dipsy-privsyn-paper dipsy-dpsyn \
		--data ../shared/data/adult/pub025/priv.csv --domain ../shared/data/adult/pub025/adult_pub025_01-domain.json \
		--public ../shared/data/adult/pub025/pub.csv --three-way build/bench/adult_pub025_3way.json \
		--out build/bench/peers-pub025

# About an hour (and 8 minutes more, once, to generate the 10^8-row file): time and memory against n.
bench-scale: $(STAMP)
	$(BIN)/python benchmarks/scale.py --rows 100000 1000000 10000000 100000000 --repeats 1
	$(BIN)/python benchmarks/scale.py --rows 100000 1000000 10000000 --parts stages --engines spark --methods dirichlet-multinomial laplace-sanitizer privsyn

# What .ci/run checks before the tests: lint, format, types, and the documentation site with warnings as errors.
check: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir build/site

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site
	@echo "open build/site/index.html"

clean:
	rm -rf build .pytest_cache .hypothesis
