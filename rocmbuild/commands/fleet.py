"""What `doctor` says about fleet provisioning: the wheel dir and --requires-from source a build
would use, and where they came from. The shared compiler cache is reported by cache.doctor_info.

Owns: inspecting (never creating or changing) the wheel dir and the requires source, as checks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rocmbuild.checks.preflight import Check
from rocmbuild.errors import UsageError
from rocmbuild.provisioning.requirements import pip_source_args, shown
from rocmbuild.provisioning.wheels import WheelDirError, load_manifest

WHEEL_DIR_ENV = "ROCMBUILD_WHEEL_DIR"
REQUIRES_FROM_ENV = "ROCMBUILD_REQUIRES_FROM"


def _origin(option: str | None, environ: Mapping[str, str], variable: str, flag: str) -> str | None:
    if option is None:
        return None
    return f"${variable}" if environ.get(variable) == option else flag


def wheel_dir_info(wheel_dir: str | None, environ: Mapping[str, str]) -> tuple[dict[str, Any], Check | None]:
    if not wheel_dir:
        return {"path": None, "note": "none: results stay on this node (--wheel-dir DIR to share them)"}, None
    path = Path(wheel_dir).expanduser().absolute()
    info: dict[str, Any] = {"path": str(path), "origin": _origin(wheel_dir, environ, WHEEL_DIR_ENV, "--wheel-dir")}
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    writable = existing is not None and existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)
    try:
        manifest = load_manifest(path).get("wheels", {}) if path.is_dir() else {}
        problem = None
    except WheelDirError as exc:  # a build would refuse it: doctor says why
        manifest, problem = {}, f"{exc.what}: {exc.why}"
    info.update(exists=path.is_dir(), writable=writable, wheels=sorted(manifest))
    if problem is not None:
        return info, Check("wheel dir", "fail", problem, f"move {path / 'manifest.json'} aside", "toolchain_missing")
    if not writable:
        return info, Check("wheel dir", "fail", f"{path} cannot be created or written by this user",
                           f"create it writable (`mkdir -p {path}`), or pass another --wheel-dir", "toolchain_missing")
    return info, Check("wheel dir", "ok", f"{path} ({len(info['wheels'])} wheel(s) in its manifest)")


def requires_from_info(requires_from: str | None,
                       environ: Mapping[str, str]) -> tuple[dict[str, Any], Check | None]:
    if not requires_from:
        return {"source": None, "note": "none: a recipe's requires must already be installed or built first"}, None

    info: dict[str, Any] = {"source": shown(requires_from),
                            "origin": _origin(requires_from, environ, REQUIRES_FROM_ENV, "--requires-from")}
    try:
        args = pip_source_args(requires_from)
    except UsageError as exc:
        return info, Check("requires-from", "fail", exc.what, exc.todo, "toolchain_missing")
    info["pip_args"] = [shown(a) for a in args]
    if args[0] == "--no-index":
        wheels = sorted(p.name for p in Path(args[-1]).glob("*.whl"))
        info["wheels"] = wheels
        return info, Check("requires-from", "ok" if wheels else "warn",
                           f"wheelhouse {args[-1]}: {len(wheels)} wheel(s)",
                           "" if wheels else "put the required wheels (e.g. a ROCm torch) there")
    return info, Check("requires-from", "ok", f"wheel index {shown(requires_from)} (pip --index-url)")


def render(fleet: Mapping[str, Any]) -> list[str]:
    wheel = fleet["wheel_dir"]
    req = fleet["requires_from"]
    lines = ["wheel dir: " + (f"{wheel['path']} (from {wheel['origin']})" if wheel.get("path") else wheel["note"]),
             "requires from: " + (f"{req['source']} (from {req['origin']})" if req.get("source") else req["note"])]
    return lines
