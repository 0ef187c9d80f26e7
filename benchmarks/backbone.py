"""Benchmark the one-base / many-adapters design of `marl_llm.models.adapters`.

1. Speed: decisions/s when K agents x B rows are scored (next-token log-probs of a prompt) in ONE
   mixed-adapter forward pass (`AgentAdapters.next_token_logprobs` with `adapter_names=`) versus
   one forward pass per agent (PEFT `set_adapter(agent)` then a plain forward on that agent's rows).
2. Memory: resident set size (RSS) of K agents as K LoRA adapters on one base versus K separate
   model copies, each configuration measured in a fresh subprocess (RSS after loading minus RSS
   before loading, after torch/transformers/peft are imported).

Prints a table and writes JSON (default benchmarks/results/backbone.json). Not part of CI.

    python benchmarks/backbone.py    # K = 2, 4, 8 agents x 8 rows x T = 8, 32, 128 tokens; memory K = 1, 2, 4, 8
    python benchmarks/backbone.py --agents 8 --rows 16 --prompt-len 16 256 --skip-memory
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def rss_mb() -> float:
    "Resident set size of this process in MiB (from /proc/self/status, else psutil)."
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import psutil
    return psutil.Process().memory_info().rss / 2**20


def agent_names(k: int) -> list[str]:
    return [f"agent_{i}" for i in range(k)]


def make_batch(bb, k: int, rows: int, prompt_len: int, seed: int = 0):
    "K*rows random prompts of `prompt_len` tokens (no padding), rows grouped by agent."
    g = torch.Generator().manual_seed(seed)
    vocab = bb.model.config.vocab_size
    ids = torch.randint(4, vocab, (k * rows, prompt_len), generator=g).to(bb.device)
    return ids, torch.ones_like(ids)


def time_pair(f, g, repeats: int, warmup: int = 2) -> tuple[float, float]:
    """Best-of-`repeats` seconds of `f()` and of `g()` (as `timeit` reports), timed alternately
    (f, g, f, g, ...) so that load from other processes on a shared machine hits both alike."""
    for _ in range(warmup):
        f(), g()
    tf, tg = [], []
    for _ in range(repeats):
        for fn, ts in ((f, tf), (g, tg)):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            t = time.perf_counter()
            fn()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            ts.append(time.perf_counter() - t)
    return min(tf), min(tg)


def bench_speed(args) -> list[dict]:
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.base import load_backbone, position_ids_from_mask
    out = []
    for k in args.agents:
        bb = load_backbone(args.backbone, device=args.device, dtype=args.dtype)
        team = AgentAdapters(bb, agent_names(k), r=args.r, init_lora_weights=False)
        rows = [a for a in team.names for _ in range(args.rows)]
        for prompt_len in args.prompt_len:
            ids, mask = make_batch(bb, k, args.rows, prompt_len)
            pos = position_ids_from_mask(mask)

            @torch.no_grad()
            def batched():  # every agent's rows in one forward pass
                return team.next_token_logprobs(rows, ids, mask)

            @torch.no_grad()
            def per_agent():  # the classic way: activate one adapter, run its rows, repeat
                outs = []
                for i, a in enumerate(team.names):
                    sl = slice(i * args.rows, (i + 1) * args.rows)
                    team.model.set_adapter(a)
                    logits = team.model(input_ids=ids[sl], attention_mask=mask[sl], position_ids=pos[sl],
                                        use_cache=False, logits_to_keep=1).logits[:, -1]
                    outs.append(logits.float().log_softmax(-1))
                return torch.cat(outs)

            err = (batched() - per_agent()).abs().max().item()  # same numbers, two ways
            t_b, t_l = time_pair(batched, per_agent, args.repeats)
            n = k * args.rows
            out.append(dict(agents=k, rows_per_agent=args.rows, prompt_len=prompt_len,
                            batched_decisions_per_s=n / t_b, per_agent_decisions_per_s=n / t_l,
                            speedup=t_l / t_b, max_abs_diff=err))
            print(f"  speed K={k} T={prompt_len}: {t_l / t_b:.2f}x", file=sys.stderr)
        del team, bb
        gc.collect()
    return out


def _warm_up_code_paths() -> None:
    """Run every code path once on a micro Qwen2 model, so that lazy imports and one-off caches are
    in the baseline RSS and not counted as model memory (its weights are a few KiB)."""
    import tempfile
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.base import build_tiny_tokenizer, load_backbone, tiny_vocab
    with tempfile.TemporaryDirectory() as d:
        cfg = Qwen2Config(vocab_size=len(tiny_vocab()), hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True)
        Qwen2ForCausalLM(cfg).save_pretrained(d)
        build_tiny_tokenizer().save_pretrained(d)
        micro = load_backbone(d)
        ids = torch.ones(2, 4, dtype=torch.long)
        with torch.no_grad():
            micro.model(input_ids=ids, logits_to_keep=1)
            AgentAdapters(micro, ["x0", "x1"]).next_token_logprobs(["x0", "x1"], ids)
    del micro
    gc.collect()


def mem_child(mode: str, k: int, args) -> dict:
    """Run in a fresh process: RSS growth for K agents as adapters on one base, or as K model copies.

    Reported twice: after loading with every weight touched (`load_backbone` may memory-map the
    checkpoint, so untouched pages are not resident yet), and after each agent has scored `rows`
    prompts (one mixed forward for adapters, one forward per copy)."""
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.models.base import load_backbone
    _warm_up_code_paths()
    r0 = rss_mb()
    if mode == "adapters":
        bb = load_backbone(args.backbone, device="cpu", dtype=args.dtype)
        team = AgentAdapters(bb, agent_names(k), r=args.r)
        models = [bb]
        n_params = bb.num_parameters + sum(team.num_parameters(a) for a in team.names)
    else:
        models = [load_backbone(args.backbone, device="cpu", dtype=args.dtype) for _ in range(k)]
        n_params = sum(m.num_parameters for m in models)
    with torch.no_grad():
        for m in models:
            for p in m.model.parameters():
                p.sum()  # touch every page of every weight
    gc.collect()
    r1 = rss_mb()
    ids, mask = make_batch(models[0], k, args.rows, args.prompt_len[-1])
    with torch.no_grad():
        if mode == "adapters":
            team.next_token_logprobs([a for a in team.names for _ in range(args.rows)], ids, mask)
        else:
            for i, m in enumerate(models):
                sl = slice(i * args.rows, (i + 1) * args.rows)
                m.model(input_ids=ids[sl], attention_mask=mask[sl], logits_to_keep=1)
    gc.collect()
    r2 = rss_mb()
    return dict(mode=mode, agents=k, params=n_params, rss_loaded_mb=r1 - r0, rss_after_forward_mb=r2 - r0)


def bench_memory(args) -> list[dict]:
    from marl_llm.models.base import load_backbone
    load_backbone(args.backbone, dtype=args.dtype)  # build the cache here, not inside the measured children
    res = []
    for k in args.mem_agents:
        for mode in ("adapters", "copies"):
            cmd = [sys.executable, __file__, "--_mem-child", mode, str(k), "--backbone", args.backbone,
                   "--r", str(args.r), "--rows", str(args.rows), "--prompt-len", str(args.prompt_len[-1])]
            if args.dtype:
                cmd += ["--dtype", args.dtype]
            p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            if p.returncode:
                raise RuntimeError(f"memory child {mode} K={k} failed:\n{p.stderr[-3000:]}")
            res.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return res


def print_tables(speed: list[dict], mem: list[dict]) -> None:
    if speed:
        print("\nSpeed: K agents x B rows, next-token log-probs of random prompts (best of --repeats runs)")
        print(f"{'K':>3} {'B':>3} {'T':>4} | {'batched dec/s':>14} {'per-agent dec/s':>16} {'speedup':>8} | {'max|diff|':>9}")
        for s in speed:
            print(f"{s['agents']:>3} {s['rows_per_agent']:>3} {s['prompt_len']:>4} | "
                  f"{s['batched_decisions_per_s']:>14.0f} {s['per_agent_decisions_per_s']:>16.0f} "
                  f"{s['speedup']:>7.2f}x | {s['max_abs_diff']:>9.1e}")
    if mem:
        one = next((m for m in mem if m["mode"] == "copies" and m["agents"] == 1), None)
        if one is None:
            print("\n(memory ratios need K=1 in --mem-agents)")
            return
        print("\nMemory: RSS growth in MiB over a fresh process's baseline (one subprocess per cell)."
              "\n'weights': loaded, every weight touched; ratio = / one model (copies, K=1); params ratio likewise."
              "\n'after fwd': after each agent scored its rows (adds activation buffers the allocator keeps;"
              " depends on batch shape, noisy).")
        print(f"{'K':>3} | {'params ratio':>15} | {'adapters':>8} {'ratio':>6} | {'copies':>7} {'ratio':>6} | "
              f"{'after fwd: adapters':>19} {'copies':>7}")
        for k in sorted({m["agents"] for m in mem}):
            a = next(m for m in mem if m["agents"] == k and m["mode"] == "adapters")
            c = next(m for m in mem if m["agents"] == k and m["mode"] == "copies")
            w1 = one["rss_loaded_mb"]
            pr = f"{a['params']/one['params']:.3f} / {c['params']/one['params']:.0f}"
            print(f"{k:>3} | {pr:>15} | {a['rss_loaded_mb']:>8.1f} {a['rss_loaded_mb']/w1:>5.2f}x | "
                  f"{c['rss_loaded_mb']:>7.1f} {c['rss_loaded_mb']/w1:>5.2f}x | "
                  f"{a['rss_after_forward_mb']:>19.1f} {c['rss_after_forward_mb']:>7.1f}")


def print_targets(speed: list[dict], mem: list[dict]) -> None:
    "One line per design target, measured in this run."
    print("\nTargets:")
    for s in speed:
        if s["agents"] == 8 and s["rows_per_agent"] == 8:
            print(f"  speed  K=8 x B=8, T={s['prompt_len']:>4}: batched / per-agent = {s['speedup']:.2f}x (target >= 3x)")
    one = next((m for m in mem if m["mode"] == "copies" and m["agents"] == 1), None)
    eight = next((m for m in mem if m["mode"] == "adapters" and m["agents"] == 8), None)
    if one and eight:
        print(f"  memory 8 adapters / one model = {eight['rss_loaded_mb'] / one['rss_loaded_mb']:.2f}x "
              f"(params {eight['params'] / one['params']:.3f}x; target <= 1.15x)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backbone", default="tiny", help="built-in name, HF id or local dir (default tiny)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--agents", type=int, nargs="+", default=[2, 4, 8], help="K values for the speed test")
    ap.add_argument("--rows", type=int, default=8, help="rows (decisions) per agent, B")
    ap.add_argument("--prompt-len", type=int, nargs="+", default=[8, 32, 128],
                    help="prompt tokens per row, T (speed: each; memory: the last)")
    ap.add_argument("--r", type=int, default=8, help="LoRA rank")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--mem-agents", type=int, nargs="+", default=[1, 2, 4, 8], help="K values for memory")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "backbone.json"))
    ap.add_argument("--_mem-child", nargs=2, metavar=("MODE", "K"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args._mem_child:
        print(json.dumps(mem_child(args._mem_child[0], int(args._mem_child[1]), args)))
        return
    speed = [] if args.skip_speed else bench_speed(args)
    mem = [] if args.skip_memory else bench_memory(args)
    print_tables(speed, mem)
    print_targets(speed, mem)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(backbone=args.backbone, device=args.device, dtype=args.dtype, r=args.r,
                rows=args.rows, torch=torch.__version__, threads=torch.get_num_threads(),
                python=platform.python_version(), machine=platform.machine(), cpus=os.cpu_count(),
                load_avg_at_end=os.getloadavg())
    out.write_text(json.dumps(dict(meta=meta, speed=speed, memory=mem), indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
