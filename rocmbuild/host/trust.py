"""Whose files rocmbuild acts on: recipes, signatures and run dirs that another user can change are refused.

Owns the ownership rule, the way ssh's StrictModes has it: a file that tells rocmbuild what to run (a
recipe, a signature file, a run dir's resume state) and the directory it is found in must belong to the
user running rocmbuild or to root, and must not be writable by anyone else.  Otherwise another user of a
shared machine could override the bundled ``torch`` recipe with a world-writable recipes dir, switch a
bundled signature off, or have root resume a run dir whose ``resume.json`` names their own recipe.

``ROCMBUILD_TRUST_SHARED_FILES=1`` lifts the rule (a team's shared recipes dir on purpose); the refusal
says so.  Group-writable is allowed when the group is the user's own (Debian's user-private groups).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rocmbuild.errors import UsageError

TRUST_VARIABLE = "ROCMBUILD_TRUST_SHARED_FILES"


def trust_shared_files() -> bool:
    return os.environ.get(TRUST_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


def untrusted_reason(path: Path, *, directory_listed: bool = False) -> str | None:
    """Why another user could change ``path`` (None: only its owner or root can).

    ``directory_listed``: ``path`` is a directory whose every file is read (a recipes or signatures dir),
    so a sticky world-writable dir does not help: anyone may add a file to it.
    """
    try:
        info = path.lstat() if path.is_symlink() else path.stat()
    except OSError:
        return None  # gone or unreadable: the caller's own error says so
    me = os.getuid()
    if info.st_uid not in (me, 0):
        return f"it belongs to uid {info.st_uid}, not to you (uid {me}) or root"
    mode = stat.S_IMODE(info.st_mode)
    sticky_dir = stat.S_ISDIR(info.st_mode) and mode & stat.S_ISVTX and not directory_listed
    if mode & stat.S_IWOTH and not sticky_dir:
        return f"anyone can write to it (mode {mode:o})"
    if mode & stat.S_IWGRP and info.st_gid != os.getgid() and not sticky_dir:
        return f"group {info.st_gid} can write to it (mode {mode:o})"
    return None


def check_trusted(path: Path, what: str, *, found_by_listing: bool = False) -> None:
    """Refuse (exit 2) ``path`` and the directory it is in when another user can change them.

    ``found_by_listing``: ``path`` was found by reading its directory (a user recipe by name, every
    signature file), so whoever can add a file there decides what is read: the directory must be safe
    even when it is sticky.
    """
    if trust_shared_files():
        return
    for candidate, listed in ((path, False), (path.parent, found_by_listing)):
        reason = untrusted_reason(candidate, directory_listed=listed)
        if reason:
            raise UsageError(f"refusing {what} {path}: {candidate} is not safe to act on",
                             why=f"{reason}; another user could change what rocmbuild runs (as you)",
                             todo=f"chmod go-w {candidate} (and chown it to yourself), or set "
                                  f"{TRUST_VARIABLE}=1 to use files shared on purpose")
