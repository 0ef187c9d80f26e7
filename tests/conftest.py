import os, pathlib, sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# papermill's "python3" kernel must be this interpreter's environment (see Makefile).
share = pathlib.Path(sys.prefix) / "share" / "jupyter"
if share.exists() and str(share) not in os.environ.get("JUPYTER_PATH", ""):
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(share), os.environ.get("JUPYTER_PATH")]))
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")          # tests never download
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
