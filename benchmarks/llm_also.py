"""LLM-ALSO at CPU scale: sparse-reward Overcooked, the rule-based critic and generator with branch validation
against no shaping, the fixed `overcooked` preset and unvalidated one-shot proposals — 3 seeds, equal total
compute (branch updates count; see `nbs/experiments/11_llm_also.ipynb`). Writes `nbs/data/llm_also.json`
(loaded and plotted by the notebook) and prints held-out sparse return ± std, runs with a soup, updates to
the first soup and the share of compute spent in branches per arm.

    OMP_NUM_THREADS=1 python benchmarks/llm_also.py                  # experiments.llm_also.SETTINGS, seeds 0 1 2 (~1 h of one core)
    python benchmarks/llm_also.py --seeds 0 --budget 8 --horizon 30  # a quick look
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    from marl_llm.experiments import llm_also as experiment
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arms", nargs="+", default=list(experiment.ARMS), choices=list(experiment.ARMS))
    ap.add_argument("--work", default=None, help="folder for the runs (default: a temporary one)")
    ap.add_argument("--out", default=str(ROOT / "nbs" / "data" / "llm_also.json"))
    for k, v in experiment.SETTINGS.items():
        ap.add_argument(f"--{k.replace('_', '-')}", type=(lambda s: s.lower() in ("1", "true", "yes")) if isinstance(v, bool) else type(v),
                        default=v)
    args = ap.parse_args(argv)
    settings = {k: getattr(args, k) for k in experiment.SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        res = experiment.run(Path(args.work or tmp), seeds=args.seeds, arms={a: experiment.ARMS[a] for a in args.arms},
                             json_path=args.out, quiet=False, **settings)
    print("\n" + experiment.table(res))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
