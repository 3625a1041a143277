"""A build inside a batch-scheduler job (Slurm): which job it is, and the run it continues.

Owns two things.  The job's identity, recorded in the run (``run.started`` / ``run.resumed``):
``SLURM_JOB_ID``, ``SLURM_RESTART_COUNT``, the array task.  And the run dir keyed by the job:
inside a job, a one-recipe build without ``--run-dir`` records into ``runs/slurm-<job id>-<recipe>``,
so when Slurm starts a requeued job again (same ``SLURM_JOB_ID``, ``SLURM_RESTART_COUNT`` raised)
the same command finds the run it was cut short in and continues it (``rocmbuild resume``), in
the same run dir, with the compiled work kept; one run, one history entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rocmbuild import paths
from rocmbuild.commands.resumestate import RESUMABLE, RESUME_FILE
from rocmbuild.errors import RocmbuildError
from rocmbuild.process.progress import live_state
from rocmbuild.records.recorder import load_run
from rocmbuild.records.recordfile import CorruptRecord, as_str, read_json_object

_IDENTITY = (("SLURM_JOB_ID", "slurm_job_id"), ("SLURM_RESTART_COUNT", "slurm_restart_count"),
             ("SLURM_ARRAY_JOB_ID", "slurm_array_job_id"), ("SLURM_ARRAY_TASK_ID", "slurm_array_task_id"),
             ("SLURM_CLUSTER_NAME", "slurm_cluster"))


def job_identity(environ: Mapping[str, str]) -> dict[str, str]:
    """The scheduler job this process runs in, as record fields (pure); empty outside a job."""
    return {key: environ[name] for name, key in _IDENTITY if environ.get(name, "").strip()}


def keyed_run_dir(environ: Mapping[str, str], recipes: Sequence[str], run_dir: Path | None) -> Path | None:
    """The run dir of this command in this job (pure): ``--run-dir`` if given, else one named after
    the job and the recipe; None outside a job or for several recipes (each has its own run)."""
    job = environ.get("SLURM_JOB_ID", "").strip()
    if not job or len(recipes) != 1:
        return None
    if run_dir is not None:
        return run_dir
    cluster = environ.get("SLURM_CLUSTER_NAME", "").strip()
    name = f"slurm-{cluster + '-' if cluster else ''}{job}-{Path(recipes[0]).stem}"
    return paths.runs_root() / name.replace("/", "_")


@dataclass(frozen=True)
class JobRun:
    """What the command does in its job: continue ``run_dir`` (resume) or build into it."""

    run_dir: Path
    resume: bool


def job_run(environ: Mapping[str, str], recipes: Sequence[str], run_dir: Path | None) -> JobRun | None:
    """Inside a job: the keyed run dir, to resume when it holds a run this command left resumable."""
    keyed = keyed_run_dir(environ, recipes, run_dir)
    if keyed is None:
        return None
    if _resumable(keyed, recipes[0]):
        return JobRun(keyed, resume=True)
    if run_dir is None and (keyed / "summary.json").exists():
        return None  # this job's run there ended by itself: a fresh run dir, as outside a job
    return JobRun(keyed, resume=False)


def _resumable(run_dir: Path, recipe: str) -> bool:
    try:
        summary, events = load_run(run_dir)
        saved = read_json_object(run_dir / RESUME_FILE)
    except (OSError, CorruptRecord, RocmbuildError):
        return False
    if summary.get("outcome") not in RESUMABLE:
        return False
    if Path(str(saved.get("recipe"))).stem != Path(recipe).stem and summary.get("recipe") != recipe:
        return False  # another recipe's run: not this command's
    return not live_state(run_dir, as_str(summary.get("started")), events).alive
