"""Which packages this host's package manager can actually install (``apt-cache policy``).

Install advice names a Debian/Ubuntu package only when the host's package sources have a
candidate for it (`apt-get install librocblas-dev` fails on a Debian release that has no such
package); otherwise the advice says where ROCm comes from.  One ``apt-cache policy`` call for a
set of names; answers are kept for the process, so pure callers can ask ``known()`` afterwards.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable

from rocmbuild.process import command as proc

_ANSWERS: dict[str, bool] = {}
ROCM_SOURCE = ("AMD's ROCm package repository at repo.radeon.com, added per rocm.docs.amd.com's quick start "
               "installation guide for this distribution")


def parse_policy(output: str) -> dict[str, bool]:
    """``apt-cache policy`` output -> name: has a candidate. Names it does not list are absent. Pure."""
    found: dict[str, bool] = {}
    current: str | None = None
    for line in output.splitlines():
        header = re.match(r"^(\S+):\s*$", line)
        if header:
            current = header.group(1).split(":")[0]
            found[current] = False
            continue
        candidate = re.match(r"^\s+Candidate:\s*(\S+)", line)
        if candidate and current is not None:
            found[current] = candidate.group(1) != "(none)"
    return found


def lookup(packages: Iterable[str], run: proc.Run = proc.capture) -> dict[str, bool] | None:
    """Whether each package has an install candidate here; None when there is no apt-cache."""
    names = [p for p in dict.fromkeys(packages) if p not in _ANSWERS]
    if names:
        if shutil.which("apt-cache") is None:
            return None
        result = run(["apt-cache", "policy", *names], env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
        if result.missing or not result.ok:
            return None
        answers = parse_policy(result.output)
        if result.output.strip() and not answers:
            return None  # not apt-cache's answer: know nothing rather than call everything absent
        for name in names:
            _ANSWERS[name] = answers.get(name, False)
    return {p: _ANSWERS[p] for p in packages}


def known(package: str) -> bool | None:
    """What ``lookup`` found for ``package``; None when it was not asked."""
    return _ANSWERS.get(package)
