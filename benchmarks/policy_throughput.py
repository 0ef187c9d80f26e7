"""Option decisions/s: the batched scoring policy vs a per-agent, per-env generate-and-parse loop, same model.

    python benchmarks/policy_throughput.py [--envs 16] [--repeats 5] [--backbone tiny] [--max-new-tokens 6]

Both policies answer the same decision points: every agent of every env of an Overcooked `OptionEnv`
right after reset (2 agents x 16 envs = 32 decisions by default). The batched policy scores all 32
menus in ONE forward pass (`MenuPolicy`, scoring mode); the loop calls `generate` once per agent per env
and parses the label (`MenuPolicy`, generation mode, one request at a time). Timings alternate and the
best of `--repeats` counts. Prints a table and writes benchmarks/results/policy_throughput.json.
"""
from __future__ import annotations
import argparse, json, os, platform, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "policy_throughput.json"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--backbone", default="tiny")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--game", default="overcooked")
    ap.add_argument("--layout", default="cramped_room")
    ap.add_argument("--max-new-tokens", type=int, default=6)
    a = ap.parse_args(argv)
    import torch
    from marl_llm.models.base import load_backbone
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.options.env import OptionEnv
    from marl_llm.models.policy import MenuPolicy, Request
    from marl_llm.options.rollout import compact_obs, short_refs

    bb = load_backbone(a.backbone, device=a.device)
    oenv = OptionEnv(a.game, a.layout, n_envs=a.envs, seed=0)
    ad = AgentAdapters(bb, oenv.agents, init_lora_weights=False)
    ds = oenv.reset()
    reqs = [Request(d.name, compact_obs(oenv.library, oenv.envs[d.env], d.agent), [short_refs(m) for m in d.labels])
            for d in ds]
    scoring = MenuPolicy(ad, mode="scoring", seed=0)
    gen = MenuPolicy(ad, mode="generation", max_new_tokens=a.max_new_tokens, seed=0)
    scoring.decide(reqs); gen.decide(reqs[:1])                      # warm up

    def batched(): return scoring.decide(reqs)
    def loop(): return [gen.decide([r])[0] for r in reqs]
    best = {"batched": float("inf"), "loop": float("inf")}
    for _ in range(a.repeats):
        for name, fn in (("batched", batched), ("loop", loop)):
            t0 = time.perf_counter(); fn(); best[name] = min(best[name], time.perf_counter() - t0)
    n = len(reqs)
    rate = {k: n / v for k, v in best.items()}
    gen.parse_failures = 0; out = loop()
    row = dict(agents=len(oenv.agents), envs=a.envs, decisions=n, batched_per_s=rate["batched"], loop_per_s=rate["loop"],
               speedup=rate["batched"] / rate["loop"], loop_parse_failures=sum(d.parse_failed for d in out),
               max_new_tokens=a.max_new_tokens, backbone=a.backbone, device=a.device,
               threads=torch.get_num_threads())
    print(f"{'policy':<44} {'decisions/s':>12}")
    print(f"{'batched scoring (1 forward, all agents x envs)':<44} {rate['batched']:>12,.1f}")
    print(f"{'per-agent per-env generate-and-parse loop':<44} {rate['loop']:>12,.1f}")
    print(f"speedup {row['speedup']:.1f}x at {row['agents']} agents x {a.envs} envs "
          f"({n} decisions; loop parse failures {row['loop_parse_failures']}/{n}, max_new_tokens {a.max_new_tokens})")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(dict(row, python=sys.version.split()[0], machine=platform.platform(),
                                       cpus=os.cpu_count()), indent=2))
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return row


if __name__ == "__main__":
    main()
