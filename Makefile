# Two commands set everything up on a fresh machine with Python >= 3.11 and make:
#   make demo   install kireme into .venv and chunk the bundled sample document
#   make test   install the dev tools too, lint, and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	$(BIN)/kireme chunk examples/travel-rules.txt --strategy recursive --max-size 120 --format text
	@echo "--- the same as JSONL, token-sized (first two rows) ---"
	$(BIN)/kireme chunk examples/travel-rules.txt --unit tokens --max-size 96 --format jsonl | head -n 2

test: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/python -m pytest

format: $(VENV)/.dev-installed
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/sentence_segmenters.py --markdown

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
