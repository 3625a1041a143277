# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# Debian's HIP toolchain (HIP 5.2, clang 15) and the tools the tests use.
APT_PACKAGES := hipcc rocminfo libamdhip64-dev rocm-device-libs ccache redis-server ninja-build cmake git
export HIP_PLATFORM ?= amd

.PHONY: install toolchain test lint demo bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# Installs the real HIP toolchain when it is missing and we can (root + apt);
# otherwise says exactly what to install.
toolchain:
	@if command -v hipcc >/dev/null && command -v ccache >/dev/null && command -v redis-server >/dev/null; then \
	  echo "toolchain: hipcc, ccache and redis-server present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "toolchain: installing $(APT_PACKAGES)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	else \
	  echo "toolchain: hipcc/ccache/redis-server missing; install them with:"; \
	  echo "  sudo apt-get install $(APT_PACKAGES)"; \
	  echo "tests marked 'hip' and 'redis' are deselected until then"; \
	fi

test: install toolchain
	$(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check rocmbuild tests benchmarks
	$(VENV)/bin/mypy

demo: install toolchain
	@bash examples/demo.sh

bench: install toolchain
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
