import os, pathlib, sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# papermill's "python3" kernel must be this interpreter's environment (see Makefile).
share = pathlib.Path(sys.prefix) / "share" / "jupyter"
if share.exists() and str(share) not in os.environ.get("JUPYTER_PATH", ""):
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(share), os.environ.get("JUPYTER_PATH")]))
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")          # tests never download
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# `make test` runs one pytest-xdist worker per core (`--dist worksteal`). The longest tests start first, so the
# workers finish together: the first worker's queue starts with them and the other steals from its tail, which
# usually leaves a test file's module-scoped fixtures (a trained run, a built docs site) made once.
SLOW_FIRST = ("test_browser.py", "methods/06_tracer", "methods/08_llm_also", "methods/01_pa_magrpo", "test_train_cli.py", "test_faults.py")


def pytest_collection_modifyitems(config, items):
    rank = lambda item: next((k for k, s in enumerate(SLOW_FIRST) if s in item.nodeid), len(SLOW_FIRST))
    items.sort(key=rank)   # stable: the rest keep their order
