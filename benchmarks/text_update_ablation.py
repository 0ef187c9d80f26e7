"""What the text update's oneDNN linears give on this machine: `peers.py`'s marl_llm update (2 agents on one
tiny base, 8 prompts x 8 completions x 16 new tokens, one optimiser step per agent) with the piece on and off,
in ONE process, the variants alternated update by update (forward order, then reversed), so that the
machine's drift hits them all alike; the table gives each variant's median s/update and the median of its
per-round ratio to "oneDNN linears on".

The piece: oneDNN linears (`marl_llm.models.dnn.CPU_ONEDNN`): the toolkit's own forward (sampling, and the scoring
forward of shared-prompt rows) runs frozen float32 CPU linears on oneDNN instead of torch's default BLAS (MKL's
sgemm). Two more pieces were measured this way and dropped once the linears ran on oneDNN: the sampler's
softmax kept for the update's LM head (turning it off took 0.98x the time) and attention over several tokens
per row as plain matmuls (1.00x).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/text_update_ablation.py              # 8 rounds (~20 s)
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/text_update_ablation.py --rounds 2   # a quick look
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402  (the same models, prompts, rewards and update as the peers benchmark)

VARIANTS = {"oneDNN linears on": True, "oneDNN linears off": False}   # -> marl_llm.models.dnn.CPU_ONEDNN


def run(rounds: int, folder: str) -> dict:
    "Seconds per update of every variant, alternated update by update in this process."
    import torch
    import marl_llm.models.dnn as md
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.base import load_backbone
    from marl_llm.learn.pipeline import make_optimizers
    peers._seed()
    names = ["agent_0", "agent_1"]
    ad = AgentAdapters(load_backbone(folder), names, r=peers.LORA["r"], alpha=peers.LORA["lora_alpha"],
                       target_modules=peers.LORA["target_modules"])
    groups, g = [(ad, make_optimizers(ad, peers.LR), names)], torch.Generator().manual_seed(0)
    step = 0
    for v in VARIANTS:                                  # one warm-up update per variant
        md.CPU_ONEDNN = VARIANTS[v]; peers.marl_update(groups, step, len(peers.PROMPTS) // len(names), g); step += 1
    times = {v: [] for v in VARIANTS}
    for r in range(rounds):
        for v in (list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]):
            md.CPU_ONEDNN = VARIANTS[v]
            t = time.perf_counter()
            peers.marl_update(groups, step, len(peers.PROMPTS) // len(names), g)
            times[v].append(time.perf_counter() - t)
            step += 1
    md.CPU_ONEDNN = True
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=8, help="rounds of all variants (each one update per variant)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "text_update_ablation.json"))
    args = ap.parse_args(argv)
    if args.rounds < 1: raise SystemExit(f"--rounds must be at least 1, got {args.rounds}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = str(peers.build_models(Path(tmp), 0, 0)["tiny"])
        times = run(args.rounds, folder)
    base = times["oneDNN linears on"]
    rows = [{"variant": v, "median_s": statistics.median(t), "x_on": statistics.median([a / b for a, b in zip(t, base)])}
            for v, t in times.items()]
    print(f"\nmarl_llm text update, {args.rounds} rounds, variants alternated in one process, 1 thread")
    print("| variant | median s/update | x on (median of per-round ratios) |\n|---|---|---|")
    for r in rows: print(f"| {r['variant']} | {r['median_s']:.3f} | {r['x_on']:.2f} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rounds": args.rounds, "rows": rows, "times": times}, indent=2))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
