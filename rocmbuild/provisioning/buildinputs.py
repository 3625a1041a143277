"""What a build sees besides its tree: environment, compilers on PATH, interpreter and its packages.

Owns: the environment a fingerprint compares (all of it but a documented list of volatile names:
the terminal, the session, rocmbuild's own sizing), the compilers the PATH resolves (``cc`` with
CC unset is whatever PATH finds first), and the build interpreter's identity (its real path
through a pyenv shim, version, prefix) with the versions of every distribution installed in it.
Values of variables are only ever hashed: a fingerprint names which variable changed, never its value.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping

from rocmbuild.process import command as proc

# Names whose value differs between two runs of one build without changing what it produces:
# the terminal and the login session, the shell's bookkeeping, schedulers' job ids.  docs/fingerprint.md.
VOLATILE_NAMES = frozenset({
    "_", "PWD", "OLDPWD", "SHLVL", "TERM", "COLORTERM", "COLORFGBG", "COLUMNS", "LINES", "TERMINFO",
    "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "WINDOWID", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR",
    "TMUX", "TMUX_PANE", "STY", "WINDOW", "LS_COLORS", "LSCOLORS", "MAIL", "PS1", "PS2", "PS4",
    "PROMPT_COMMAND", "HISTFILE", "HISTSIZE", "HISTFILESIZE", "HISTCONTROL", "LESSOPEN", "LESSCLOSE",
    "INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "MANAGERPID", "NOTIFY_SOCKET", "GPG_AGENT_INFO",
    "GPG_TTY", "MOTD_SHOWN", "SUDO_COMMAND", "SUDO_UID", "SUDO_GID", "SUDO_USER",
})
VOLATILE_PREFIXES = ("SSH_", "XDG_SESSION_", "TERM_", "ITERM_", "KITTY_", "KONSOLE_", "VTE_", "VSCODE_",
                     "WT_", "GNOME_TERMINAL_", "SLURM_", "ROCMBUILD_")

# Looked up on the build's PATH: the compilers and linkers a build system finds when CC/CXX are unset.
COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "clang++", "hipcc", "ld")

_INTERPRETER = r"""
import importlib.metadata as m, json, os, re, sys
own = set(json.loads(sys.argv[1]))
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
pkgs = sorted({f"{norm(d.metadata['Name'] or '?')}=={d.version}" for d in m.distributions()
               if norm(d.metadata['Name'] or '?') not in own})
print(json.dumps({"executable": os.path.realpath(sys.executable), "version": sys.version,
                  "prefix": sys.prefix, "packages": pkgs}))
"""


def is_volatile(name: str) -> bool:
    return name in VOLATILE_NAMES or name.startswith(VOLATILE_PREFIXES)


def build_environment(env: Mapping[str, str], also_ignored: Iterable[str] = ()) -> dict[str, str]:
    """The variables a fingerprint compares: all but the volatile ones and ``also_ignored``. Pure."""
    ignored = set(also_ignored)
    return {k: v for k, v in env.items() if not is_volatile(k) and k not in ignored}


def value_hashes(env: Mapping[str, str], salt: str) -> dict[str, str]:
    """A salted short hash per variable: enough to name the one that changed, not to read a value. Pure."""
    return {k: hashlib.sha256(f"{salt}\0{k}\0{v}".encode("utf-8", "surrogateescape")).hexdigest()[:12]
            for k, v in sorted(env.items())}


def _first_version_line(output: str) -> str:
    for line in output.splitlines():
        if re.search(r"\d+\.\d+", line):
            return line.strip()
    return output.strip().splitlines()[0] if output.strip() else "unknown"


def compilers(env: Mapping[str, str], run: proc.Run = proc.capture) -> str:
    """``name=<real path> <version>`` for each compiler the build's PATH resolves, in order."""
    found = []
    for name in COMPILERS:
        where = shutil.which(name, path=env.get("PATH", ""))
        if where is None:
            continue
        result = run([where, "--version"], env=env, timeout=30)  # remembered by file identity (command.py)
        found.append(f"{name}={os.path.realpath(where)} {_first_version_line(result.output)}")
    return "; ".join(found) or "none"


def interpreter(python: str, env: Mapping[str, str], own_packages: Iterable[str],
                run: proc.Run = proc.capture) -> dict[str, object]:
    """What the build's ``python3`` really is (a pyenv shim resolved by running it) and what it has installed.

    The recipe's own packages are left out: the build installs them, and the outputs check covers them."""
    own = sorted({re.sub(r"[-_.]+", "-", p).lower() for p in own_packages})
    result = run([python, "-c", _INTERPRETER, json.dumps(own)], env=env, timeout=60)
    if result.ok:
        try:
            data = json.loads(result.output.strip().splitlines()[-1])
            if isinstance(data, dict):
                return data
        except (ValueError, IndexError):
            pass
    return {"executable": python, "error": result.output.strip()[-200:] or f"exit {result.returncode}"}
