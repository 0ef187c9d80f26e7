"""`marl-llm train` as a real process: a SIGKILLed run resumes to the same metrics as an uninterrupted
one; under `accelerate launch` both ranks hold identical adapters after an update; bad input is refused."""
import json, os, signal, subprocess, sys, time, shutil
from pathlib import Path
import pytest

SMALL = ["--game", "harvest", "--layout", "small", "--algo", "pa-magrpo", "--backbone", "tiny", "--envs", "1",
         "--group", "2", "--horizon", "40", "--eval-envs", "2", "--eval-every", "3", "--record-episodes", "1",
         "--checkpoint-every", "1", "--seed", "3"]


def cli(*args, **kw):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **kw.pop("env", {})}
    return subprocess.run([sys.executable, "-m", "marl_llm.cli", *args], capture_output=True, text=True, env=env, **kw)


def metrics(run):
    return [{k: v for k, v in json.loads(l).items() if k != "time"} for l in (run / "metrics.jsonl").read_text().splitlines()]


def test_resume_after_sigkill_reproduces_metrics(tmp_path):
    n = 6
    straight = cli("train", *SMALL, "--updates", str(n), "--out", str(tmp_path / "a"), timeout=900)
    assert straight.returncode == 0, straight.stderr[-2000:]
    assert (tmp_path / "a" / "learning_curve.html").exists() and list((tmp_path / "a" / "episodes").glob("*.json"))

    run = tmp_path / "b"
    p = subprocess.Popen([sys.executable, "-m", "marl_llm.cli", "train", *SMALL, "--updates", str(n), "--out", str(run)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"})
    latest = run / "checkpoints" / "latest.json"
    t0 = time.time()
    while time.time() - t0 < 600:
        if latest.exists() and json.loads(latest.read_text())["step"] >= 2: break
        if p.poll() is not None: break
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL); p.wait()
    killed_at = json.loads(latest.read_text())["step"]
    assert killed_at < n, "the run finished before it could be killed; the test would prove nothing"
    assert not (run / "learning_curve.html").exists()

    resumed = cli("train", "--resume", "--out", str(run), timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert metrics(run) == metrics(tmp_path / "a")


def test_bad_input_is_refused(tmp_path):
    r = cli("train", "--out", str(tmp_path / "x"), "--algo", "ppo")
    assert r.returncode == 2 and "valid" in r.stderr and "pa-magrpo" in r.stderr
    r = cli("train", "--out", str(tmp_path / "x"), "--group", "1")
    assert r.returncode == 2 and "group size" in r.stderr
    r = cli("train", "--out", str(tmp_path / "x"), "--game", "overcooked", "--layout", "moon_base")
    assert r.returncode == 2 and "cramped_room" in r.stderr
    r = cli("train", "--resume", "--out", str(tmp_path / "nothing_here"))
    assert r.returncode == 2 and "nothing_here" in r.stderr


@pytest.mark.skipif(shutil.which("accelerate") is None and not (Path(sys.executable).parent / "accelerate").exists(),
                    reason="accelerate is not installed")
def test_accelerate_two_cpu_ranks_hold_identical_adapters(tmp_path):
    acc = shutil.which("accelerate") or str(Path(sys.executable).parent / "accelerate")
    run = tmp_path / "ddp"
    # accelerate's `--cpu` spawns several CPU ranks only through MPI; torchrun (`--multi_gpu`) on a machine without
    # GPUs gives the same two CPU ranks, and the trainer joins them with Accelerator(cpu=True) (gloo).
    r = subprocess.run([acc, "launch", "--num_processes", "2", "--multi_gpu", "--num_machines", "1", "--mixed_precision", "no",
                        "--dynamo_backend", "no", "-m", "marl_llm.cli", "train", *SMALL, "--envs", "2", "--updates", "1",
                        "--device", "cpu", "--out", str(run)], capture_output=True, text=True, timeout=900,
                       env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, (r.stdout[-1500:], r.stderr[-3000:])
    d0, d1 = (json.loads((run / f"rank{k}_adapters.json").read_text()) for k in (0, 1))
    assert d0["step"] == d1["step"] == 1
    assert d0["sha256"] == d1["sha256"]
    rows = metrics(run)
    assert rows[-1]["trained_turns"] > 0          # an update really happened
