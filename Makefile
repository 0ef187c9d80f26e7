# marl_llm: two commands.
#   make run    set up .venv and run the main job on the embedded default (tiny backbone, CPU)
#   make test   set up .venv and run the test suite (what CI runs)
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
# CPU installs pin torch; GPU users pass TORCH= (empty) to keep the CUDA build already in .venv.
TORCH  ?= torch==2.13.0
# papermill's kernel "python3" must be this venv's python, whatever the user has installed elsewhere.
export JUPYTER_PATH := $(CURDIR)/$(VENV)/share/jupyter
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: setup run test sync-check clean-venv ref-venv
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if [ -n "$(TORCH)" ]; then $(BIN)/python -m pip install "$(TORCH)"; fi
	$(BIN)/python -m pip install -e ".[dev]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (marl_llm)" >/dev/null
	touch $@

# The main job on the embedded default: tiny backbone, Overcooked cramped_room, a few minutes on CPU.
RUN := runs/quickstart-$(shell date +%Y%m%d-%H%M%S)
run: setup
	$(BIN)/marl-llm demo
	$(BIN)/marl-llm guards --game overcooked --layout cramped_room --episodes 16 --out $(RUN)-guards.json
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} $(BIN)/marl-llm train --game overcooked --layout cramped_room --method pa-magrpo \
	  --backbone tiny --updates 8 --envs 2 --group 4 --horizon 80 --rules false --shaping overcooked \
	  --guards $(RUN)-guards.json --eval-every 4 --eval-envs 4 --out $(RUN)

sync-check: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" bash .ci/sync-check

# overcooked-ai 1.1.0 (the reference engine) needs numpy<2, so it lives in its own venv; best effort:
# without it the differential test is skipped, never failed.
REF_VENV ?= .venv-ref
ref-venv: $(REF_VENV)/.installed
$(REF_VENV)/.installed:
	(test -x $(REF_VENV)/bin/python || $(PYTHON) -m venv $(REF_VENV)) && \
	$(REF_VENV)/bin/python -m pip install -q "numpy<2" scipy tqdm overcooked-ai==1.1.0 && touch $@ \
	|| echo "overcooked-ai reference unavailable: tests/test_overcooked_reference.py will skip"

# One torch thread per process: on a 2-core machine shared with any other job, multi-threaded OpenMP
# processes spin-wait on each other and a notebook can run 10-100x slower (override: OMP_NUM_THREADS=2).
test: sync-check
	-@$(MAKE) --no-print-directory ref-venv
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} OVERCOOKED_REF_PYTHON=$${OVERCOOKED_REF_PYTHON:-$(CURDIR)/$(REF_VENV)/bin/python} $(BIN)/python -m pytest tests -q -ra

clean-venv:
	rm -rf $(VENV)
