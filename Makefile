# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# Debian's HIP toolchain (HIP 5.2, clang 15) and the tools the tests use; clang-19 + lld-19
# compile HIP for gfx942 (docs/rocm-facts.md, "gfx942 for real on Debian 12").
APT_PACKAGES := hipcc rocminfo libamdhip64-dev rocm-device-libs ccache redis-server ninja-build cmake git clang-19 lld-19 llvm-19 clang-tools-19 chromium
# CMake's HIP language with clang-19 needs CMake >= 3.28 (Debian 12 has 3.25): PyPI's, into the venv.
CMAKE_PIP := cmake>=3.28,<5
export HIP_PLATFORM ?= amd
# The tests start the rocmbuild command and Python builds hundreds of times: with PYTHONDONTWRITEBYTECODE
# set (some shells and CI images set it) each start compiles the package from source again (~0.35 s of
# CPU a start) and pytest rewrites every test module's asserts again (~1 s a run).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install toolchain test test-integration test-fast test-slurm lint demo bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# Installs the real HIP toolchain when it is missing and we can (root + apt);
# otherwise says exactly what to install.
toolchain: install
	@if command -v hipcc >/dev/null && command -v ccache >/dev/null && command -v redis-server >/dev/null \
	    && command -v clang++-19 >/dev/null && command -v ld.lld-19 >/dev/null; then \
	  echo "toolchain: hipcc, clang-19, ccache and redis-server present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "toolchain: installing $(APT_PACKAGES)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	else \
	  echo "toolchain: hipcc/ccache/redis-server missing; install them with:"; \
	  echo "  sudo apt-get install $(APT_PACKAGES)"; \
	  echo "tests marked 'hip', 'clang19' and 'redis' are deselected until then"; \
	fi
	@$(PY) -c 'import cmake, sys; v = tuple(map(int, cmake.__version__.split(".")[:2])); sys.exit(v < (3, 28))' \
	  2>/dev/null || $(PY) -m pip install -q '$(CMAKE_PIP)'
	@# The device-library dir with gfx942's ISA bitcode, in the user cache (outside the tree).
	@if command -v clang-19 >/dev/null; then \
	  echo "toolchain: gfx942 device libraries in $$(bash examples/device-libs.sh clang-19)"; \
	fi

# Two tiers, both run by CI (.ci/run): `make test` is everything but the tests marked `integration`,
# one pytest-xdist worker per CPU (they are in process or bounded real processes: ~2 min here);
# `make test-integration` is the whole real builds, kills and hostile servers through the installed
# command (~12 min), serially, since on 2 CPUs two workers of real builds make timing-bound tests flaky.
TEST_WORKERS ?= auto
test: install toolchain
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not integration"

test-integration: install toolchain
	$(PY) -m pytest -q -m integration

# The scheduler tier: a real single-node Slurm cluster (munged, slurmctld, slurmd; tests/slurm/cluster.sh
# installs slurm-wlm + munge when missing and it may), the tests against it, then the daemons stopped by
# their PIDs whatever the tests did.  Needs root.  tests/conftest.py collects tests/slurm only here.
SLURM_DIR ?= /tmp/rocmbuild-slurm
test-slurm: install toolchain
	ROCMBUILD_SLURM_DIR=$(SLURM_DIR) bash tests/slurm/cluster.sh start
	SLURM_CONF=$(SLURM_DIR)/slurm.conf TEST_SLURM=1 $(PY) -m pytest -q -p no:cacheprovider tests/slurm; \
	  rc=$$?; ROCMBUILD_SLURM_DIR=$(SLURM_DIR) bash tests/slurm/cluster.sh stop; exit $$rc

# The in-process tier: pure policy, parsing, planning through make_plan, and the ladder through the
# real BuildSession with a fake attempt runner (Services.attempt). Seconds, no toolchain needed.
# One worker per CPU: the tier is CPU-bound and in process, with no timing-bound test (on a quiet 2-CPU
# machine two workers take it from ~20 s to ~13 s; on CPUs other work keeps busy they gain nothing).
FAST_TESTS := arch catalogue classifier diagnosis_quality environment host ladder layout ldcache loader_dirs logscan noise \
              options paths planning recipe remedies services session_fast stoppolicy watcher
test-fast: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) -p no:cacheprovider $(addprefix tests/test_,$(addsuffix .py,$(FAST_TESTS)))

lint: install
	$(VENV)/bin/ruff check rocmbuild tests benchmarks
	$(VENV)/bin/mypy

demo: install toolchain
	@bash examples/demo.sh

bench: install toolchain
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
