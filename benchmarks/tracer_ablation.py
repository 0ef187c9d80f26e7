"""TRACER's ablation at CPU scale: regret-matching controllers vs always-speak, never-speak and random
controllers, and GSPO on vs off — 3 seeds, one shared warm start, equal compute (see
`nbs/experiments/08_tracer.ipynb`). Writes `nbs/data/tracer_ablation.json` (loaded and plotted by the
notebook) and prints held-out accuracy ± std, tokens per solved problem and speak/refresh rates per arm.

    OMP_NUM_THREADS=1 python benchmarks/tracer_ablation.py            # experiments.tracer.SETTINGS, seeds 0 1 2 (~1 h of one core)
    python benchmarks/tracer_ablation.py --seeds 0 --updates 5        # a quick look (any TRACERConfig field as --field value)
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    from marl_llm.experiments import tracer as experiment
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arms", nargs="+", default=list(experiment.ARMS), choices=list(experiment.ARMS))
    ap.add_argument("--work", default=None, help="folder for the runs (default: a temporary one)")
    ap.add_argument("--out", default=str(ROOT / "nbs" / "data" / "tracer_ablation.json"))
    for k, v in experiment.SETTINGS.items(): ap.add_argument(f"--{k.replace('_', '-')}", type=type(v), default=v)
    args = ap.parse_args(argv)
    settings = {k: getattr(args, k) for k in experiment.SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        res = experiment.run(Path(args.work or tmp), seeds=args.seeds, arms={a: experiment.ARMS[a] for a in args.arms},
                             json_path=args.out, quiet=False, **settings)
    print(f"\n{'arm':12s} {'start':>6s} {'final mean ± std':>17s} {'tokens/solved':>14s} {'eval tokens':>12s} {'speak':>6s} {'refresh':>8s}")
    for arm, s in experiment.summarise(res).items():
        tps = f"{s['tokens_per_solved']:.1f}" if s["tokens_per_solved"] else "—"
        print(f"{arm:12s} {s['start_mean']:6.3f} {s['mean']:9.3f} ± {s['std']:.3f} {tps:>14s} {s['eval_tokens']:12.0f} "
              f"{s['speak_rate']:6.2f} {s['refresh_rate']:8.2f}")
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
