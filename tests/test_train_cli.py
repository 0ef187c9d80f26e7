"""`marl-llm train` as a real process, for every method on the pipeline: a SIGKILLed run resumes to the same
metrics as an uninterrupted one; under `accelerate launch` both ranks hold identical adapters after an update
(a menu method and a text method); bad input is refused with one line."""
import json, os, signal, subprocess, sys, time, shutil
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


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "marl_llm.cli", *args], capture_output=True, text=True,
                          env={**ENV, **kw.pop("env", {})}, **kw)


def metrics(run):
    return [{k: v for k, v in json.loads(l).items() if not k.startswith("time")} for l in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("method", list(SMALL))
def test_resume_after_sigkill_reproduces_metrics(method, tmp_path):
    n = 5
    straight = cli("train", *SMALL[method], "--updates", str(n), "--out", str(tmp_path / "a"), timeout=900)
    assert straight.returncode == 0, straight.stderr[-2000:]
    assert (tmp_path / "a" / "learning_curve.html").exists() and (tmp_path / "a" / "adapters").is_dir()
    if method == "pa-magrpo": assert list((tmp_path / "a" / "episodes").glob("*.json")) and (tmp_path / "a" / "audit.json").exists()

    run = tmp_path / "b"
    p = subprocess.Popen([sys.executable, "-m", "marl_llm.cli", "train", *SMALL[method], "--updates", str(n), "--out", str(run)],
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

    resumed = cli("train", "--resume", "--out", str(run), timeout=900)       # the method comes from config.json
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    a, b = metrics(tmp_path / "a"), metrics(run)
    assert a == b, [(x, y) for x, y in zip(a, b) if x != y][:1]
    if method == "strat-reasoner": assert "policy/clip_frac" in a[-1]


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
