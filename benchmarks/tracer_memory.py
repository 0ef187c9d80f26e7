"""TRACER's memory: N agents on ONE base (one LoRA adapter each, both roles by prompt) versus the public
implementation's design, a full model copy per agent and per role (2N copies, one LoRA adapter each).

Each cell runs in a fresh subprocess and does the same work: every agent-role writes `group` candidates
for `tasks` prompts (the one-base design in one batched generate; the copies one generate each) and
takes one clipped GSPO step through the shared `per_agent_update`. Reported: peak RSS (ru_maxrss) of
the process and its growth over the process's baseline after imports, in MiB.

The built-in `tiny` backbone is a few MiB, so its difference hides in the allocator's noise; by default
the script also builds a larger random-init Qwen2 locally (`--hidden 1024 --layers 12`, ~150M parameters,
nothing downloaded) so the weights dominate, as they do for a real backbone.

    python benchmarks/tracer_memory.py                       # N = 2, 4; tiny and the local ~150M model
    python benchmarks/tracer_memory.py --agents 2 4 8 --hidden 768 --layers 12
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


from marl_llm.core.records import peak_rss_mb as peak_mb, rss_mb   # VmHWM / VmRSS: a child's own peak, not its parent's


def build_local(folder: Path, hidden: int, layers: int, seed: int = 0) -> Path:
    "A random-init Qwen2 with the tiny tokenizer, saved to `folder` (nothing downloaded)."
    import torch
    from transformers import Qwen2ForCausalLM
    from marl_llm.models.base import TINY_CONFIG, _qwen2_config, build_tiny_tokenizer
    arch = {**TINY_CONFIG, "hidden_size": hidden, "intermediate_size": 3 * hidden, "num_hidden_layers": layers,
            "num_attention_heads": max(2, hidden // 64), "num_key_value_heads": max(1, hidden // 128)}
    torch.manual_seed(seed)
    Qwen2ForCausalLM(_qwen2_config(arch)).save_pretrained(folder)
    build_tiny_tokenizer().save_pretrained(folder)
    return folder


def child(design: str, n: int, backbone: str, tasks: int, group: int) -> dict:
    "Runs in a fresh process: load, generate, one GSPO step; returns the peak RSS and its growth."
    import numpy as np
    import torch
    torch.set_num_threads(1)
    from marl_llm.models.base import load_backbone
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.core.records import Turn
    from marl_llm.models.sampling import sample_texts
    from marl_llm.learn.update import per_agent_update, text_logprob_fn
    from marl_llm.learn.pipeline import make_optimizers
    from marl_llm.methods.tracer import TRACERConfig
    cfg = TRACERConfig(agents=max(2, n)).validate()
    import gc
    gc.collect()
    base, base_now = peak_mb(), rss_mb()
    roles = [(f"agent_{i}", role) for i in range(n) for role in ("propose", "review")]
    if design == "one base":                          # one base, one adapter per agent; roles are prompts
        groups = [(AgentAdapters(load_backbone(backbone), [f"agent_{i}" for i in range(n)], r=8, alpha=16), roles)]
    else:                                             # the reference: a model copy per agent and per role
        groups = [(AgentAdapters(load_backbone(backbone), [a], r=8, alpha=16), [(a, role)]) for a, role in roles]
    with torch.no_grad():                             # touch every weight: loading may only memory-map them
        for ad, _ in groups: sum(float(p.sum()) for p in ad.backbone.model.parameters())
    gc.collect()
    loaded = rss_mb() - base_now                      # weights + adapters resident, before any work
    params = sum(sum(p.numel() for p in ad.backbone.model.parameters()) for ad, _ in groups)
    g = torch.Generator().manual_seed(0)
    for ad, who in groups:
        opt = make_optimizers(ad, cfg.lr)
        agents = [a for a, _ in who for _ in range(tasks * group)]
        prompts = [f"Question: {k % 9 + 1} plus {k % 7 + 1}? Answer:\nagent 0 {role}:" for _, role in who
                   for k in range(tasks * group)]
        ss = sample_texts(ad, agents, prompts, cfg.max_new_tokens, cfg.temperature, generator=g)
        turns = [Turn(a, group=k // group, prompt_ids=s.prompt_ids, completion_ids=s.completion_ids, logprob=s.logprobs,
                      info={"adv": float(np.random.default_rng(k).normal())}) for k, (a, s) in enumerate(zip(agents, ss))]
        per_agent_update(turns, text_logprob_fn(ad, cfg.temperature), opt, ad.parameters, cfg, step=1)
    return {"design": design, "agents": n, "copies": len(groups), "params_m": params / 1e6,
            "loaded_mb": loaded, "peak_mb": peak_mb(), "growth_mb": peak_mb() - base}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, nargs="+", default=[2, 4], help="team sizes N")
    ap.add_argument("--hidden", type=int, default=1024, help="hidden size of the locally built model (0: tiny only)")
    ap.add_argument("--layers", type=int, default=12, help="layers of the locally built model")
    ap.add_argument("--tasks", type=int, default=8, help="prompts per agent-role")
    ap.add_argument("--group", type=int, default=4, help="candidates per prompt")
    ap.add_argument("--out", default=str(ROOT / "nbs" / "data" / "tracer_memory.json"))
    ap.add_argument("--_child", nargs=3, metavar=("DESIGN", "N", "BACKBONE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        print(json.dumps(child(args._child[0], int(args._child[1]), args._child[2], args.tasks, args.group)))
        return
    rows, env = [], {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        backbones = {"tiny": "tiny"}
        if args.hidden > 0:
            backbones[f"local {args.hidden}x{args.layers}"] = str(build_local(Path(tmp) / "local", args.hidden, args.layers))
        for label, bb in backbones.items():
            for n in args.agents:
                for design in ("one base", "2N copies"):
                    cmd = [sys.executable, __file__, "--_child", design, str(n), bb, "--tasks", str(args.tasks),
                           "--group", str(args.group)]
                    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
                    if p.returncode: raise RuntimeError(f"{design} N={n} {label} failed:\n{p.stderr[-3000:]}")
                    rows.append({"backbone": label, **json.loads(p.stdout.strip().splitlines()[-1])})
                    print(f"  measured {label} N={n} {design}", file=sys.stderr)
    print("\nTRACER memory (MiB), one fresh process per row: 'loaded' = resident after loading models and adapters (every weight touched),"
          "\n'growth' = peak during the work (generate + one GSPO step) over the process's size after imports.")
    print(f"{'backbone':>16} | {'N':>2} | {'design':>10} | {'models':>6} | {'params (M)':>10} | {'loaded':>7} | {'ratio':>5} | "
          f"{'growth':>7} | ratio")
    for r in rows:
        one = next(x for x in rows if x["backbone"] == r["backbone"] and x["agents"] == r["agents"] and x["design"] == "one base")
        print(f"{r['backbone']:>16} | {r['agents']:>2} | {r['design']:>10} | {r['copies']:>6} | {r['params_m']:>10.1f} | "
              f"{r['loaded_mb']:>7.0f} | {r['loaded_mb'] / max(one['loaded_mb'], 1e-9):>4.1f}x | {r['growth_mb']:>7.0f} | "
              f"{r['growth_mb'] / max(one['growth_mb'], 1e-9):.2f}x")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
