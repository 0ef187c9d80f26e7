"""Faults a run survives, through the real CLI: a damaged newest checkpoint (resume falls back to the previous one and
reproduces the uninterrupted metrics), a kill before the first checkpoint (resume starts over), a full disk during a
checkpoint (one line, the run resumable)."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
RUN = ["train", "--game", "harvest", "--layout", "small", "--envs", "1", "--group", "2", "--horizon", "30",
       "--eval-envs", "2", "--eval-every", "1", "--record-episodes", "0", "--seed", "5"]


def cli(*args, timeout=600, **kw):
    return subprocess.run([sys.executable, "-m", "marl_llm.cli", *map(str, args)], capture_output=True, text=True,
                          env=ENV, timeout=timeout, **kw)


def error_lines(stderr):
    "The error lines of stderr (progress bars of the run before the fault are not errors); no traceback allowed."
    assert "Traceback" not in stderr, stderr[-3000:]
    return [l for l in stderr.splitlines() if "error:" in l]


def metrics(run):
    return [{k: v for k, v in json.loads(l).items() if not k.startswith("time")}
            for l in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight") / "run"
    r = cli(*RUN, "--updates", "4", "--checkpoint-every", "1", "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    return metrics(out)


@pytest.mark.parametrize("damage", ["truncate optim", "truncate adapter", "delete state", "tear latest.json"])
def test_damaged_checkpoint_falls_back_to_the_previous_one(straight, damage, tmp_path):
    out = tmp_path / "run"
    assert cli(*RUN, "--updates", "3", "--checkpoint-every", "1", "--out", out).returncode == 0
    ck = out / "checkpoints" / "step_000003"
    if damage == "truncate optim": (ck / "optim.pt").write_bytes((ck / "optim.pt").read_bytes()[:100])
    if damage == "truncate adapter":
        f = next(ck.rglob("*.safetensors")); f.write_bytes(f.read_bytes()[:50])
    if damage == "delete state": (ck / "state.json").unlink()
    if damage == "tear latest.json": (out / "checkpoints" / "latest.json").write_text('{"step": 3, "pa')
    r = cli("train", "--resume", "--out", out, "--updates", "4")
    assert r.returncode == 0, r.stderr[-2000:]
    if damage != "tear latest.json":
        assert "step_000003 is damaged" in r.stderr and "resuming from step_000002" in r.stderr, r.stderr[-1500:]
    assert metrics(out) == straight


def test_nothing_intact_is_one_line(tmp_path):
    out = tmp_path / "run"
    assert cli(*RUN, "--updates", "1", "--checkpoint-every", "1", "--out", out).returncode == 0
    (out / "checkpoints" / "step_000001" / "optim.pt").write_bytes(b"")
    r = cli("train", "--resume", "--out", out, "--updates", "2")
    err = error_lines(r.stderr)
    assert r.returncode == 2 and len(err) == 1 and "no intact checkpoint" in err[0] and "optim.pt" in err[0], r.stderr


def test_killed_before_the_first_checkpoint_resumes_from_step_0(straight, tmp_path):
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-m", "marl_llm.cli", *RUN, "--updates", "4", "--checkpoint-every", "100",
                          "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    m, t0 = out / "metrics.jsonl", time.time()
    while time.time() - t0 < 300 and p.poll() is None:
        if m.exists() and len(m.read_text().splitlines()) >= 2: break           # step 0 and 1 logged, no checkpoint yet
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL); p.wait()
    assert not list((out / "checkpoints").glob("step_*")), "a checkpoint was written: the test would prove nothing"
    r = cli("train", "--resume", "--out", out)
    assert r.returncode == 0 and "no checkpoint yet; starting from step 0" in r.stderr, r.stderr[-1500:]
    assert metrics(out)[:5] == straight


FULL_DISK = """
import errno, sys, torch
import marl_llm.learn.checkpoint as ck
calls = {"n": 0}
real = torch.save
def save(obj, f, *a, **k):
    calls["n"] += 1
    if calls["n"] > 4: raise OSError(errno.ENOSPC, "No space left on device", str(f))   # the 3rd checkpoint fails
    return real(obj, f, *a, **k)
ck.torch.save = save
from marl_llm.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_full_disk_is_one_line_and_the_run_resumes(straight, tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-c", FULL_DISK, *RUN, "--updates", "4", "--checkpoint-every", "1", "--out", str(out)],
                       capture_output=True, text=True, env=ENV, timeout=600)
    err = error_lines(r.stderr)
    assert r.returncode == 2 and len(err) == 1 and "No space left on device" in err[0] and "--resume" in err[0], r.stderr
    assert list((out / "checkpoints").glob(".tmp_step_*"))                       # the failed save's orphan ...
    r = cli("train", "--resume", "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not list((out / "checkpoints").glob(".tmp_step_*"))                   # ... is cleaned at the next start
    assert metrics(out) == straight
