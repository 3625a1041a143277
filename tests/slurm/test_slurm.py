"""rocmbuild under a real Slurm cluster (tests/slurm/cluster.sh: munged, slurmctld, slurmd on this machine).

The scheduler tier, run by `make test-slurm` (.ci/run) with the cluster up and ``SLURM_CONF`` set.
A real HIP tree (kernels compiled by hipcc for gfx90a, make keeping the objects it made) is built by
tests/slurm/job.sh in a batch job; its build waits on a gate file after compiling, so the job can be
requeued or signalled mid-build, deterministically.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROCMBUILD = str(Path(sys.executable).parent / "rocmbuild")

KERNEL = """#include <hip/hip_runtime.h>
__global__ void scale_{n}(float *values, size_t n, float factor) {{
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) values[i] *= factor;
}}
extern "C" int launch_scale_{n}(float *v, size_t n, float f) {{
    hipLaunchKernelGGL(scale_{n}, dim3((n + 255) / 256), dim3(256), 0, 0, v, n, f);
    return static_cast<int>(hipGetLastError());
}}
"""

MAKEFILE = """OBJS = k1.o k2.o
objects: $(OBJS)
%.o: %.hip
\thipcc --offload-arch=$(ARCH) -fPIC -c $< -o $@
libk.so: $(OBJS)
\thipcc --offload-arch=$(ARCH) -shared -o $@ $(OBJS)
"""

RECIPE = """
name = "hipjob"
packages = []
[env]
HIP_PLATFORM = "amd"
[arch]
variables = ["HIPJOB_ARCH"]
separator = ","
plain = true
[steps]
build = ["make -j$MAX_JOBS objects ARCH=$HIPJOB_ARCH",
         "echo waiting for the gate; while [ ! -e gate ]; do sleep 0.2; done",
         "make libk.so ARCH=$HIPJOB_ARCH"]
[verify]
artifacts = ["libk.so"]
[clean]
paths = ["*.o", "libk.so"]
[resources]
memory_per_job_gb = 1
job_variables = ["MAX_JOBS"]
"""


@pytest.fixture(scope="module", autouse=True)
def cluster() -> None:
    assert os.environ.get("SLURM_CONF"), "the Slurm tier runs with the cluster up: make test-slurm"
    up = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
    assert up.returncode == 0 and up.stdout.strip(), up.stderr


def env_for(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROCMBUILD_", "SLURM_"))}
    env.update(SLURM_CONF=os.environ["SLURM_CONF"], HIP_PLATFORM="amd",
               PATH=f"{Path(ROCMBUILD).parent}:{os.environ.get('PATH', '')}",
               XDG_STATE_HOME=str(tmp / "state"), XDG_CACHE_HOME=str(tmp / "cache"),
               XDG_CONFIG_HOME=str(tmp / "config"))
    for var in ("LIBRARY_PATH", "LD_LIBRARY_PATH", "MAX_JOBS", "VIRTUAL_ENV", "CXXFLAGS"):
        env.pop(var, None)
    return env


def hip_tree(tmp: Path) -> tuple[Path, Path]:
    src = tmp / "src"
    src.mkdir()
    for n in (1, 2):
        (src / f"k{n}.hip").write_text(KERNEL.format(n=n))
    (src / "Makefile").write_text(MAKEFILE)
    recipe = tmp / "hipjob.toml"
    recipe.write_text(RECIPE)
    return src, recipe


def sbatch(tmp: Path, *args: str, env: dict[str, str]) -> str:
    proc = subprocess.run(["sbatch", "--parsable", *args], env=env, capture_output=True, text=True, timeout=60,
                          cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split(";")[0]


def job_field(job: str, name: str) -> str:
    shown = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True, timeout=30).stdout
    match = re.search(rf"\b{name}=(\S+)", shown)
    return match.group(1) if match else ""


def wait_until(what: str, check: Any, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def job_run_dir(tmp: Path, job: str) -> Path | None:
    found = list((tmp / "state" / "rocmbuild" / "runs").glob(f"slurm-*{job}-hipjob"))
    return found[0] if len(found) == 1 else None


def summary(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read(run_dir / "summary.json") or "{}")
    return data


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in read(run_dir / "events.jsonl").splitlines()]


def cancel(job: str) -> None:
    subprocess.run(["scancel", job], capture_output=True, timeout=30)


def started_and_gated(tmp: Path, job: str, out: Path) -> Path:
    """Wait until the job's rocmbuild has compiled the objects and waits on the gate; its run dir."""
    holder: list[Path] = []

    def gated() -> bool:
        run_dir = job_run_dir(tmp, job)
        if run_dir is None or "waiting for the gate" not in read(run_dir / "attempt-1.log"):
            return False
        holder.append(run_dir)
        return True

    try:
        wait_until("the build to reach its gate", gated)
    except AssertionError:
        raise AssertionError(f"job output:\n{read(out)}") from None
    return holder[0]


@pytest.mark.hip
def test_a_requeued_job_continues_its_run_with_the_compiled_objects(tmp_path: Path) -> None:
    src, recipe = hip_tree(tmp_path)
    env = env_for(tmp_path)
    out = tmp_path / "job.out"
    job = sbatch(tmp_path, "--requeue", "--open-mode=append", "-c", "1", "--mem=3G", "-o", str(out),
                 str(HERE / "job.sh"), str(recipe), "--source", str(src), "--arch", "gfx90a", env=env)
    try:
        run_dir = started_and_gated(tmp_path, job, out)
        objects = {p.name: p.stat().st_mtime_ns for p in src.glob("*.o")}
        assert sorted(objects) == ["k1.o", "k2.o"]
        assert subprocess.run(["scontrol", "requeue", job], capture_output=True, timeout=30).returncode == 0
        wait_until("the interrupted run's records", lambda: summary(run_dir).get("outcome") == "interrupted")
        wait_until("the job back in the queue", lambda: job_field(job, "JobState") == "PENDING")
        assert summary(run_dir)["todo"] == f"rocmbuild resume {run_dir}"
        (src / "gate").write_text("")
        wait_until("the interrupted start's script to end", lambda: "rocmbuild exit 130" in read(out))
        # slurmd refuses a launch in the second it revoked the job's credential ("Killing non-startable
        # batch JobId=N: Job credential revoked": the job ends FAILED, never started again).  Slurm's own
        # requeue delay (BeginTime) keeps real jobs clear of that; this test starts the job at once, so
        # it first lets that second pass.
        time.sleep(2)
        subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=True, timeout=30)
        wait_until("the job to complete", lambda: job_field(job, "JobState") in ("COMPLETED", "FAILED"))
    finally:
        cancel(job)
    log = read(out)
    assert job_field(job, "JobState") == "COMPLETED", log
    assert f"job {job} start 0" in log and f"job {job} start 1" in log and "rocmbuild exit 0" in log
    assert job_field(job, "Restarts") == "1"
    runs = list((tmp_path / "state" / "rocmbuild" / "runs").glob("slurm-*"))
    assert runs == [run_dir], "one run dir for the job"
    done = summary(run_dir)
    assert done["outcome"] == "succeeded"
    assert [(a["number"], a["ended"], a["diagnosis"]) for a in done["attempts"]] == [
        (1, "interrupted", None), (2, "exited", None)]
    assert {p.name: p.stat().st_mtime_ns for p in src.glob("*.o")} == objects, "the objects were reused"
    assert "hipcc" not in read(run_dir / "attempt-2.log").split("waiting for the gate")[0], "nothing recompiled"
    assert (src / "libk.so").is_file()
    resumed = [e for e in events(run_dir) if e["event"] == "run.resumed"]
    assert len(resumed) == 1 and resumed[0]["slurm_restart_count"] == "1" and resumed[0]["slurm_job_id"] == job
    listed = subprocess.run([ROCMBUILD, "history", "--json"], env=env, capture_output=True, text=True, timeout=60)
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["recipe"], r["outcome"]) for r in rows] == [("hipjob", "succeeded")], "one history entry"


@pytest.mark.hip
def test_term_before_the_time_limit_stops_cleanly_and_the_script_requeues(tmp_path: Path) -> None:
    """--signal=B:TERM@N: the batch shell gets SIGTERM before the limit, rocmbuild exits 130 with a
    resumable run whose todo is the exact resume command, the how-to's script requeues the job, and its
    next start finishes the build in the same run dir."""
    src, recipe = hip_tree(tmp_path)
    env = {**env_for(tmp_path), "REQUEUE_ON_INTERRUPT": "1"}
    out = tmp_path / "job.out"
    # Slurm sends it once the time left is within N s plus its 30 s check period: with 2 minutes and
    # @60, 30-60 s after the start (well after rocmbuild has started; a --time=1 sends it at once).
    job = sbatch(tmp_path, "--requeue", "--open-mode=append", "--time=2", "--signal=B:TERM@60", "-c", "1",
                 "--mem=3G", "-o", str(out), str(HERE / "job.sh"), str(recipe), "--source", str(src),
                 "--arch", "gfx90a", env=env)
    try:
        # Mid-compile or at the gate, whichever the build has reached.
        wait_until("rocmbuild's exit code in the job output", lambda: "rocmbuild exit" in read(out), timeout=150)
        assert "rocmbuild exit 130" in read(out), read(out)
        run_dir = job_run_dir(tmp_path, job)
        assert run_dir is not None, read(out)
        first = summary(run_dir)
        assert first["outcome"] == "interrupted" and first["todo"] == f"rocmbuild resume {run_dir}"
        assert all(a["ended"] == "interrupted" and a["diagnosis"] is None for a in first["attempts"])
        wait_until("the job requeued by its script", lambda: job_field(job, "JobState") == "PENDING")
        (src / "gate").write_text("")
        # Its next start gets room to finish (a loaded machine compiles slower than the signal comes),
        # after the second of the requeue has passed (see the requeue test: a revoked credential).
        time.sleep(2)
        subprocess.run(["scontrol", "update", f"JobId={job}", "TimeLimit=10"], check=True, timeout=30)
        subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=True, timeout=30)
        wait_until("the job to complete", lambda: job_field(job, "JobState") in ("COMPLETED", "FAILED", "TIMEOUT"))
    finally:
        cancel(job)
    assert job_field(job, "JobState") == "COMPLETED", read(out)
    assert f"job {job} start 1" in read(out) and "rocmbuild exit 0" in read(out), read(out)
    done = summary(run_dir)
    assert done["outcome"] == "succeeded" and done["attempts"][-1]["ended"] == "exited"
    assert [a["number"] for a in done["attempts"]] == list(range(1, len(done["attempts"]) + 1))
    assert list((tmp_path / "state" / "rocmbuild" / "runs").glob("slurm-*")) == [run_dir], "the same run continued"


def plan_in_job(tmp: Path, recipe: Path, *sbatch_args: str) -> dict[str, Any]:
    out = tmp / f"plan-{len(list(tmp.glob('plan-*')))}.json"
    sbatch(tmp, "--wait", *sbatch_args, "-o", str(out), "--wrap",
           f"{ROCMBUILD} plan {recipe} --source {tmp / 'src'} --arch gfx90a --skip-preflight --json",
           env=env_for(tmp))
    data: dict[str, Any] = json.loads(read(out))
    return data


def test_max_jobs_comes_from_the_jobs_allocation_not_the_node(tmp_path: Path) -> None:
    _, recipe = hip_tree(tmp_path)
    cpus = os.cpu_count() or 1
    assert cpus >= 2, "the node needs more CPUs than the job asks for"
    by_cpus = plan_in_job(tmp_path, recipe, "-c", "1", "--mem=3G")
    assert by_cpus["jobs"] == 1 and "SLURM_CPUS_PER_TASK=1" in by_cpus["jobs_reason"], by_cpus["jobs_reason"]
    # 1 GiB per compile (the recipe) in a job of 1 GiB: one job, though it has 2 CPUs.
    by_memory = plan_in_job(tmp_path, recipe, "-c", "2", "--mem=1G")
    assert by_memory["jobs"] == 1 and "SLURM_MEM_PER_NODE=1024M" in by_memory["jobs_reason"], by_memory
    assert shutil.which("sbatch")
