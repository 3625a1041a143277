"""The share of the machine a batch scheduler gave this job (Slurm): its CPUs and its memory.

A Slurm job may run on a node it shares with other jobs.  Where Slurm enforces the allocation with
cgroups (``task/cgroup``), the CPU set and the memory limit already say it (facts.cpu_count and
memory_available read them); where it does not (``proctrack/linuxproc``, ``task/none``), only the
job's environment says it: ``SLURM_CPUS_PER_TASK`` (else ``SLURM_CPUS_ON_NODE``) CPUs, and
``SLURM_MEM_PER_NODE`` MiB (else ``SLURM_MEM_PER_CPU`` MiB per CPU).  MAX_JOBS is sized from the
tighter of the two, never from the whole node.  Pure functions over the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_MIB = 1 << 20


@dataclass(frozen=True)
class Allocation:
    """What the job was given; None where the environment does not say."""

    job: str
    cpus: int | None
    memory: int | None  # bytes
    cpus_from: str = ""
    memory_from: str = ""


def _positive(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def allocation(environ: Mapping[str, str]) -> Allocation | None:
    """The Slurm job's allocation on this node, or None outside a job."""
    job = (environ.get("SLURM_JOB_ID") or "").strip()
    if not job:
        return None
    cpus, cpus_from = None, ""
    for name in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"):
        if (value := _positive(environ.get(name))) is not None:
            cpus, cpus_from = value, f"{name}={value}"
            break
    memory, memory_from = None, ""
    if (per_node := _positive(environ.get("SLURM_MEM_PER_NODE"))) is not None:
        memory, memory_from = per_node * _MIB, f"SLURM_MEM_PER_NODE={per_node}M"
    elif (per_cpu := _positive(environ.get("SLURM_MEM_PER_CPU"))) is not None:
        memory, memory_from = per_cpu * (cpus or 1) * _MIB, f"SLURM_MEM_PER_CPU={per_cpu}M x {cpus or 1} CPUs"
    return Allocation(job, cpus, memory, cpus_from, memory_from)


def capped_cpus(count: int, reason: str, environ: Mapping[str, str]) -> tuple[int, str]:
    """``count`` CPUs (as measured) capped by the job's allocation, with why."""
    alloc = allocation(environ)
    if alloc is None or alloc.cpus is None or alloc.cpus >= count:
        return count, reason
    plural = "CPU" if alloc.cpus == 1 else "CPUs"
    return alloc.cpus, f"{alloc.cpus} {plural} (Slurm job {alloc.job}: {alloc.cpus_from}; node: {reason})"


def capped_memory(available: int, reason: str, environ: Mapping[str, str]) -> tuple[int, str]:
    """``available`` bytes (as measured) capped by the job's memory limit, with why."""
    alloc = allocation(environ)
    if alloc is None or alloc.memory is None or alloc.memory >= available:
        return available, reason
    return alloc.memory, (f"{alloc.memory / (1 << 30):.1f} GiB (Slurm job {alloc.job}: {alloc.memory_from}; "
                          f"node: {reason})")
