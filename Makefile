# neardup: `make demo` and `make test` set everything up on a machine with Python 3.11+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint typecheck unit warm bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/neardup dedup --demo -o demo-out --report

# Compile the numba kernels once into the on-disk cache before tests run in parallel. numba
# invalidates a cached kernel only when its own file changes, not when a kernel it calls does,
# so the whole cache is dropped whenever any compiled source changes.
WARM := $(VENV)/.kernels-warm
$(WARM): $(STAMP) $(wildcard src/neardup/core/*.py) src/neardup/engines/kernels.py src/neardup/core/unicode_table.npz
	find src -name '*.nbi' -delete -o -name '*.nbc' -delete
	$(BIN)/python -c "import neardup; neardup.dedup(['warm up the kernels', 'warm up the kernels'])"
	$(BIN)/python -c "import neardup, pyarrow as pa, tempfile; \
	  t = pa.table({'text': ['warm up the engine', 'warm up the engine']}); \
	  d = tempfile.TemporaryDirectory(); neardup.dedup_external(t, work_dir=d.name, memory_limit=1 << 20)"
	touch $(WARM)

warm: $(WARM)

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: setup
	$(BIN)/mypy

unit: warm
	$(BIN)/pytest -n 2 -q --dist loadgroup

test: lint typecheck unit

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache .ruff_cache
	find src tests -name __pycache__ -type d -prune -exec rm -rf {} +
