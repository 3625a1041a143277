"""MAX_JOBS from the peak per compile job: how many jobs the next attempt can afford.

After an OOM kill (or a stall the memory guard saw coming), halving MAX_JOBS is a guess; the attempt
measured what one compile job needs (the memory guard's samples and the launcher's ``ru_maxrss``), so
the next attempt's job count can come from that:

    jobs = max(1, floor((available memory - reserve) / peak per job))

but never above what halving gives, so the ladder still converges.  Owns the arithmetic
(``size_jobs``, pure), the evidence the session carries on the diagnosis to ``reduce_jobs``
(``MemoryEvidence``, built by ``evidence``), and whether a failure is about memory at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocmbuild.records.recordfile import as_int, as_number, as_object, as_str

GB = 1e9


@dataclass(frozen=True)
class MemoryEvidence:
    """What an attempt measured, for the next one's job count."""

    peak_per_job: int | None    # bytes: the largest compile job seen
    peak_job: str | None        # which one (``cc1plus``, ``clang++ -o kernel.o``)
    available: int              # bytes available after the attempt (its jobs' memory is back)
    reserve: int                # bytes the memory guard keeps free
    memory_related: bool        # an OOM kill or a stall under memory pressure: the peak is what matters


def size_jobs(current: int, peak_per_job: int | None, available: int, reserve: int) -> tuple[int, str]:
    """(jobs, jobs_reason) for the next attempt: what fits in memory, at most half of ``current`` (pure)."""
    halved = max(1, current // 2)
    if not peak_per_job or peak_per_job <= 0:
        return halved, f"halved from {current} by reduce_jobs"
    usable = max(0, available - reserve)
    fits = max(1, usable // peak_per_job)
    what = (f"a {_size(peak_per_job)} peak per compile job and {_size(available)} available"
            + (f", {_size(reserve)} reserved" if reserve else ""))
    if fits >= halved:
        return halved, f"halved from {current} by reduce_jobs ({fits} would fit: {what})"
    return fits, f"{fits} from {what} (halving would give {halved})"


def _size(count: int) -> str:
    return f"{count / GB:.1f} GB" if count >= GB else f"{count / 1e6:.0f} MB"


def memory_related(category: str, memory: Mapping[str, object] | None) -> bool:
    """An out_of_memory failure, a confirmed OOM kill, or a stall while the guard had to pause jobs (pure)."""
    memory = memory or {}
    if category == "out_of_memory" or as_object(memory.get("oom")).get("status") == "confirmed":
        return True
    if category == "stalled":
        low = as_number(memory.get("min_available"))
        reserve = as_number(memory.get("reserve")) or 0
        return bool(memory.get("pauses")) or (low is not None and low < reserve)
    return False


def evidence(category: str, memory: Mapping[str, object] | None, available: int) -> MemoryEvidence:
    """The evidence from an attempt record's ``memory`` and the memory available now."""
    memory = memory or {}
    return MemoryEvidence(as_int(memory.get("peak_rss_per_job")), as_str(memory.get("peak_rss_job")), available,
                          int(as_number(memory.get("reserve")) or 0), memory_related(category, memory))


def next_jobs(current: int, found: MemoryEvidence | None) -> tuple[int, str]:
    """``reduce_jobs``' answer: sized from the peak when the failure was about memory, else halved."""
    if found is None or not found.memory_related:
        return size_jobs(current, None, 0, 0)
    return size_jobs(current, found.peak_per_job, found.available, found.reserve)
