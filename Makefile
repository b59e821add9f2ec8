# Two commands set everything up on a fresh machine with Python >= 3.11 and make:
#   make demo   install kireme into .venv and chunk the bundled sample document
#   make test   install the dev tools and optional backends too, lint, type-check, and run the whole test suite
#               (the headless-browser test also wants Debian's chromium, chromium-driver and
#               fonts-noto-cjk: `make test` installs them where root can apt-get, else that test skips)
PYTHON ?= python3
# The CPU build of torch, for the optional sentence-transformers tests. On Linux a plain
# `pip install torch==X` takes PyPI's CUDA build (GBs), and PyPI has no `X+cpu` build at all. So the
# recipe first asks pip's configured sources for `torch==X+cpu`: that succeeds, offline, only where they
# already hold the CPU build (a local mirror or wheel folder, as on this project's machines); anywhere
# else it fails in a second or two and the CPU build comes from PyTorch's CPU index (TORCH_INDEX; on
# macOS that index's plain build is the CPU one). Never a fallback to plain PyPI: that would be CUDA.
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test typecheck lint format bench clean browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --no-cache-dir --quiet --upgrade pip

# the optional C extension (hatch_build.py) is compiled by the install: a changed source reinstalls
NATIVE := src/kireme/_speedups.c hatch_build.py

$(VENV)/.installed: pyproject.toml $(NATIVE) | $(BIN)/python
	$(BIN)/python -m pip install --no-cache-dir --no-compile --quiet -e '.[index]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml $(NATIVE) scripts/install-dev.sh scripts/dev-constraints.txt | $(BIN)/python
	bash scripts/install-dev.sh $(BIN)/python $(TORCH_VERSION) $(TORCH_INDEX)
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	$(BIN)/kireme chunk examples/travel-rules.txt --strategy recursive --max-size 120 --format text
	@echo "--- the same as JSONL, token-sized (first two rows) ---"
	$(BIN)/kireme chunk examples/travel-rules.txt --unit tokens --max-size 96 --format jsonl | head -n 2
	@echo "--- a Markdown document by its structure: heading path, table header repeated in embed_text ---"
	$(BIN)/kireme chunk examples/travel-allowance.md --strategy markdown --max-size 120 --table fill-down --format jsonl | sed -n 5p
	@echo "--- index the examples with the bundled model, then search them (run it again: nothing is re-embedded) ---"
	$(BIN)/kireme index examples --db .kireme/demo-index
	$(BIN)/kireme search "役員が東京に泊まるときの宿泊費の上限" --db .kireme/demo-index -k 1 --format table

# mkdocs runs without --quiet: --quiet drops warnings before --strict counts them (a broken page passed)
test: $(VENV)/.dev-installed
	-@$(MAKE) --no-print-directory browser
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir .kireme/site
	$(BIN)/python -m pytest

# the files and settings are in pyproject.toml ([tool.mypy]): all of src/kireme, strictly
typecheck: $(VENV)/.dev-installed
	$(BIN)/mypy

browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then echo "chromium present"; \
	elif [ "$$(df -Pm . | awk 'NR == 2 { print $$4 }')" -lt 1500 ]; then \
	  echo "under 1500 MB of disk free: chromium not installed, the browser test will be skipped"; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-noto-cjk >/dev/null; \
	  apt-get clean; \
	else echo "no chromium and no root apt-get: the browser test will be skipped"; fi

format: $(VENV)/.dev-installed
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/sentence_segmenters.py --markdown

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis src/kireme/_speedups*.so build
