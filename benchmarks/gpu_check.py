"""The GPU check, ready for when a GPU is lent (`make gpu-check`, <= 8 minutes, nothing downloaded).

On the built-in `small` backbone (~78 M parameters, random init, the `tiny` tokenizer) in bfloat16 on CUDA:
1. a mixed-adapter batch equals each agent's rows run alone (max |logit difference|, per dtype tolerance);
2. 3 updates of PA-MAGRPO (Overcooked, options) and 3 of a text method (TRACER) through the one pipeline,
   every metric finite, seconds per update;
3. option decisions/s of batched scoring (ONE forward for every agent x env) vs the per-agent
   generate-and-parse loop, at 2 agents x 16 envs and 8 agents x 64 envs (the >= 10x target lives here);
4. peak GPU memory. Everything goes to one JSON (`--out`, default `$OUT/gpu_check.json` or benchmarks/results/).

CI runs it at tiny size on CPU (`tests/test_gpu_check.py`: `--backbone tiny --device cpu --quick`).

    make gpu-check                                                     # small, cuda, bfloat16
    python benchmarks/gpu_check.py --backbone tiny --device cpu --quick  # the CPU smoke run
"""
from __future__ import annotations

import argparse, json, math, os, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mixed_equals_alone(bb, agents: int = 4) -> dict:
    """Logits of a batch whose rows use different adapters vs each agent's rows alone (non-zero LoRA weights).

    In bfloat16 the two paths round differently (the grouped LoRA vs PEFT's single-adapter forward, over 30 layers), so
    both are also compared to the float32 answer (the same weights cast up): the mixed batch passes when it equals
    `alone` within the tolerance, or when it is no further from float32 than `alone` is (`err_mixed <= 1.5 err_alone`).
    The `fp32` pass on CUDA checks exactness outright.
    """
    import torch
    from marl_llm.models.adapters import AgentAdapters
    names = [f"agent_{i}" for i in range(agents)]
    ad = AgentAdapters(bb, names, seed=0)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for n in names:
            for p in ad.parameters(n): p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    enc = bb.encode([f"agent {i} holds an onion; pot 2 0 has {i} onions" for i in range(2 * agents)])
    rows = [names[i % agents] for i in range(2 * agents)]

    def split(adapter_of):                                                # each agent's rows run as their own batch
        out = None
        for n in names:
            idx = [i for i, r in enumerate(rows) if r == n]
            part = ad.logits(adapter_of(n), enc["input_ids"][idx], enc["attention_mask"][idx]).float()
            out = part.new_zeros((len(rows), *part.shape[1:])) if out is None else out
            out[idx] = part
        return out

    with torch.no_grad():
        mixed = ad.logits(rows, enc["input_ids"], enc["attention_mask"]).float()
        alone = split(lambda n: n)
        base = ad.logits("__base__", enc["input_ids"], enc["attention_mask"]).float()
    m = enc["attention_mask"].bool()
    diff = float((mixed - alone).abs()[m].max())
    moved = float((mixed - base).abs()[m].max())                          # the adapters do change the logits
    top1 = float((mixed.argmax(-1) == alone.argmax(-1))[m].float().mean())
    f32 = bb.model.dtype == torch.float32
    tol_f32 = 1e-3 if str(bb.device).startswith("cuda") else 1e-4       # GPU float32 reductions reorder with batch shape
    tol = tol_f32 if f32 else 5e-2
    res = {"agents": agents, "rows": len(rows), "dtype": str(bb.model.dtype).replace("torch.", ""), "max_abs_diff": diff,
           "tolerance": tol, "top1_agree": round(top1, 4), "adapter_effect": moved}
    ok = diff <= tol
    if not f32:                                                            # how far each path is from the float32 answer
        bb.model.float()
        with torch.no_grad():
            ref = split(lambda n: n)
            base = ad.logits("__base__", enc["input_ids"], enc["attention_mask"]).float()
        res["err_mixed"], res["err_alone"] = float((mixed - ref).abs()[m].max()), float((alone - ref).abs()[m].max())
        ok = ok or res["err_mixed"] <= 1.5 * res["err_alone"]
        res["adapter_effect"] = moved = float((ref - base).abs()[m].max())  # judged in float32, where rounding is tiny
    return {**res, "ok": ok and moved > 10 * tol_f32}                     # the effect is judged in float32 either way


def three_updates(method: str, backbone: str, device: str, dtype: str, out: Path, quick: bool) -> dict:
    "3 updates of a method through `fit`; seconds per update and whether every metric is finite."
    from marl_llm.learn.pipeline import fit
    if method == "pa-magrpo":
        from marl_llm.methods.pa_magrpo import PAMAGRPO, PAMAGRPOConfig
        m = PAMAGRPO(PAMAGRPOConfig(backbone=backbone, device=device, dtype=dtype, updates=3, envs=2 if quick else 8,
                                    group=2 if quick else 4, horizon=30 if quick else 80, eval_every=0, checkpoint_every=1000,
                                    record_episodes=0, rules=False))
    else:
        from marl_llm.methods.tracer import TRACER, TRACERConfig
        m = TRACER(TRACERConfig(backbone=backbone, device=device, dtype=dtype, updates=3, tasks_per_update=2 if quick else 16,
                                group=2 if quick else 4, rounds=3, eval_every=0, checkpoint_every=1000, sft_steps=0))
    t0 = time.perf_counter()
    rows = fit(m, out / method, quiet=True)
    train = [r for r in rows if r["step"] > 0]
    vals = [v for r in train for k, v in r.items() if isinstance(v, float) and not k.startswith("time")]
    return {"updates": len(train), "s_per_update": round((time.perf_counter() - t0) / max(len(train), 1), 3),
            "finite": all(math.isfinite(v) for v in vals), "last": {k: v for k, v in train[-1].items() if not k.startswith("time")}}


def decisions_per_s(bb, agents: int, envs: int, repeats: int, max_new_tokens: int = 6) -> dict:
    "Batched scoring vs per-agent generate-and-parse on the same Overcooked decision points (`agents` adapters, `envs` per agent)."
    from marl_llm.models.adapters import AgentAdapters
    from marl_llm.options.env import OptionEnv
    from marl_llm.options.rollout import compact_obs, short_refs
    from marl_llm.models.policy import MenuPolicy, Request
    names = [f"agent_{i}" for i in range(agents)]
    oenv = OptionEnv("overcooked", "cramped_room", n_envs=max(1, agents * envs // 2), seed=0)
    ds = oenv.reset()[:agents * envs]
    reqs = [Request(names[k % agents], compact_obs(oenv.library, oenv.envs[d.env], d.agent), [short_refs(m) for m in d.labels])
            for k, d in enumerate(ds)]
    ad = AgentAdapters(bb, names, init_lora_weights=False)
    scoring, gen = MenuPolicy(ad, mode="scoring", seed=0), MenuPolicy(ad, mode="generation", max_new_tokens=max_new_tokens, seed=0)
    scoring.decide(reqs); gen.decide(reqs[:1])                                 # warm up
    sync = _sync(bb.device)
    best = {"batched": float("inf"), "loop": float("inf")}
    for _ in range(repeats):
        for name, fn in (("batched", lambda: scoring.decide(reqs)), ("loop", lambda: [gen.decide([r])[0] for r in reqs])):
            sync(); t0 = time.perf_counter(); fn(); sync(); best[name] = min(best[name], time.perf_counter() - t0)
    n = len(reqs)
    return {"agents": agents, "envs_per_agent": envs, "decisions": n, "batched_per_s": round(n / best["batched"], 1),
            "loop_per_s": round(n / best["loop"], 1), "speedup": round(best["loop"] / best["batched"], 1)}


def _sync(device):
    import torch
    return torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backbone", default="small")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default=None, help="default: bfloat16 on CUDA with bf16 support, else float32")
    ap.add_argument("--quick", action="store_true", help="small sizes (the CPU smoke run CI does)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only-mixed", action="store_true", help="stop after the mixed-adapter batch checks")
    a = ap.parse_args(argv)
    import torch
    from marl_llm.models.base import load_backbone
    from marl_llm.core.config import ConfigError, check_device, check_dtype
    try:
        check_device(a.device)
        dtype = a.dtype or ("bfloat16" if a.device.startswith("cuda") and torch.cuda.is_bf16_supported() else "float32")
        check_dtype(dtype, a.device)
    except ConfigError as e: sys.exit(f"gpu_check: {e}")
    out = Path(a.out or (Path(os.environ["OUT"]) / "gpu_check.json" if os.environ.get("OUT") else ROOT / "benchmarks" / "results" / "gpu_check.json"))
    cuda = a.device.startswith("cuda")
    if cuda: torch.cuda.reset_peak_memory_stats()
    t_start = time.perf_counter()
    res = {"backbone": a.backbone, "device": a.device, "dtype": dtype, "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name() if cuda else None}

    def save():
        res["seconds"] = round(time.perf_counter() - t_start, 1)
        if cuda: res["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        out.parent.mkdir(parents=True, exist_ok=True); out.write_text(json.dumps(res, indent=1, default=str))

    bb = load_backbone(a.backbone, device=a.device, dtype=dtype)
    res["parameters_m"] = round(bb.num_parameters / 1e6, 2)
    res["mixed_equals_alone"] = mixed_equals_alone(bb); save()
    print("mixed-adapter batch vs alone:", res["mixed_equals_alone"], flush=True)
    del bb
    if cuda and dtype != "float32":                                       # the exact pass: same check in float32
        res["mixed_equals_alone_fp32"] = mixed_equals_alone(load_backbone(a.backbone, device=a.device, dtype="float32")); save()
        print("  in float32:", res["mixed_equals_alone_fp32"], flush=True)
    if a.only_mixed: return 0 if res["mixed_equals_alone"]["ok"] else 1
    with tempfile.TemporaryDirectory() as d:
        for method in ("pa-magrpo", "tracer"):
            res[method] = three_updates(method, a.backbone, a.device, dtype, Path(d), a.quick); save()
            print(method, {k: v for k, v in res[method].items() if k != "last"}, flush=True)
    sizes = [(2, 4), (4, 8)] if a.quick else [(2, 16), (8, 64)]
    res["decisions"] = []
    for agents, envs in sizes:
        bb = load_backbone(a.backbone, device=a.device, dtype=dtype)           # one AgentAdapters per loaded base
        res["decisions"].append(decisions_per_s(bb, agents, envs, 1 if a.quick else a.repeats)); save()
        print("decisions/s:", res["decisions"][-1], flush=True)
    save()
    ok = all(res[k]["ok"] for k in ("mixed_equals_alone", "mixed_equals_alone_fp32") if k in res) and all(res[m]["finite"] and res[m]["updates"] == 3 for m in ("pa-magrpo", "tracer"))
    print(f"\n| check | result |\n|---|---|")
    for k in ("mixed_equals_alone", "mixed_equals_alone_fp32"):
        if k in res: r = res[k]; print(f"| mixed batch = alone, {r['dtype']} | max diff {r['max_abs_diff']:.2e} "
                                       f"(tol {r['tolerance']}, top-1 agree {r['top1_agree']}"
                                       + (f", vs float32: mixed {r['err_mixed']:.2e}, alone {r['err_alone']:.2e}" if "err_mixed" in r else "") + ") |")
    for m in ("pa-magrpo", "tracer"): print(f"| {m}: 3 updates | {res[m]['s_per_update']} s/update, finite: {res[m]['finite']} |")
    for r in res["decisions"]:
        print(f"| {r['agents']} agents x {r['envs_per_agent']} | batched {r['batched_per_s']}/s vs loop {r['loop_per_s']}/s = {r['speedup']}x |")
    if cuda: print(f"| peak GPU memory | {res['peak_gpu_mb']} MiB |")
    print(f"| total | {res['seconds']} s |\nwritten: {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
