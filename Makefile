# Two set-up commands for a fresh machine with Python 3.11:
#   make reproduce   create .venv, install, regenerate every result and figure (snakemake on every core)
#   make test        create .venv, install with dev extras, run the test suite
PYTHON ?= python3.11
VENV ?= .venv
CORES ?= $(shell nproc 2>/dev/null || echo 2)
BIN := $(VENV)/bin
# Offline: a torchvision-layout folder to take datasets from (shared/data beside the checkout
# when it exists); otherwise datasets are downloaded into data/.
AIRFL_DATA_MIRROR ?= $(wildcard $(abspath ../shared/data))
export AIRFL_DATA_MIRROR
export DVC_NO_ANALYTICS := 1
export OMP_NUM_THREADS := 1
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: install pin reproduce dvc-record exp snakemake-record test lock clean-results vendor-vega

# The exact versions of requirements.lock (constraints), so a fresh clone gets the versions the
# results were made with; pyproject.toml holds the ranges airfl works with.
$(BIN)/airfl: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -qq --upgrade pip
	$(BIN)/pip install -qq -c requirements.lock -e '.[dev]'
	touch $@

# After changing a dependency in pyproject.toml: install within the new ranges and pin what was
# installed (every package but airfl itself and editable plug-ins) into requirements.lock. Where
# the package index offers CUDA builds of torch, install the CPU build into .venv first.
pin:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -qq -e '.[dev]'
	{ sed -n '/^#/p' requirements.lock; $(BIN)/pip freeze --exclude-editable; } > requirements.lock.tmp
	mv requirements.lock.tmp requirements.lock

install: $(BIN)/airfl

# Snakemake runs the DAG on every core, its jobs forked from a fork server that has imported
# torch and the registry once (airfl.pipeline.forkserved; plain jobs if it cannot start);
# dvc-record then stores its outputs in DVC, so `dvc status` is clean and `dvc repro` runs
# nothing afterwards (no stage runs twice).
reproduce: install
	$(BIN)/python -m airfl.pipeline.forkserved $(BIN)/snakemake --cores $(CORES)
	$(MAKE) dvc-record

# Record what Snakemake made in DVC (dvc.lock and the cache): check that dvc.yaml is the DAG of
# params.yaml (the `dvc-dag` stage's stamp; it stops with what to run otherwise) and write each
# stage's manifest (results/dvc/: the params values and code digests it depends on), then commit.
dvc-record: install
	$(BIN)/airfl dvc-yaml --stamp results/dvc_dag.txt
	$(BIN)/dvc commit -f -q

# A DVC experiment of one or more knobs, e.g. make exp SET='seed=7' (STAGE: a dvc.yaml stage,
# default all): the values are set in params.yaml in place, comments and layout kept (as a plain
# `dvc exp run -S` does too while params.yaml is in its dumper's layout: `python -m
# airfl.pipeline.dvc_exp layout --check`), `dvc exp run` runs the stale stages, and Snakemake
# records the outputs DVC made, so `snakemake -n` agrees with `dvc status`.
exp: install
	$(BIN)/python -m airfl.pipeline.dvc_exp run $(SET) -- $(STAGE)

# After `dvc repro` or a plain `dvc exp run`: Snakemake records the outputs DVC made current.
snakemake-record: install
	$(BIN)/python -m airfl.pipeline.dvc_exp record

# -n: one worker per core; the pipeline tests that share one built workspace stay together.
test: install
	$(BIN)/pytest -q -n auto --dist loadgroup --durations=25

# After changing code or params: regenerate the quick profile from scratch and record it in
# dvc.lock (committed), so that CI's `dvc status` check compares against current code. The old
# lock goes first: `dvc commit` never drops a stage that dvc.yaml no longer has.
lock: install clean-results
	$(BIN)/snakemake --cores 2 --config profile=quick
	rm -f dvc.lock
	$(MAKE) dvc-record
	$(BIN)/python -m airfl.pipeline.crosscheck write reference/quick_summary.json
	$(BIN)/dvc status

clean-results:
	rm -rf results figures .snakemake/metadata

# Rebuild .dvc/plots/offline.html, the page `dvc plots show` writes (.dvc/config:
# plots.html_template), with vega, vega-lite and vega-embed inline so it renders offline; the
# versions are pinned in src/airfl/pipeline/dvc_plots.py (VEGA_PACKAGES). Needs npm.
vendor-vega: install
	rm -rf .vega-packages && mkdir .vega-packages
	cd .vega-packages && for spec in $$(../$(BIN)/python -c "from airfl.pipeline.dvc_plots \
	    import VEGA_PACKAGES as V; print(' '.join(f'{n}@{v}' for n, v in V.items()))"); do \
	  name=$${spec%@*}; mkdir $$name && file=$$(npm pack -q $$spec | tail -n 1) && \
	  tar xzf $$file -C $$name; done
	$(BIN)/python -m airfl.pipeline.dvc_plots .vega-packages
	rm -rf .vega-packages
