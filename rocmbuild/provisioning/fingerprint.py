"""Build fingerprints: what makes a finished build "the same build" (`up_to_date`).

Owns: computing a plan's fingerprint (recipe content, source revision or tree hash, arch list,
ROCm version, HIP compiler and version, the Python that builds, and the env knobs that change the
build), storing the last success's fingerprint host-wide keyed by the tree, and the pure
comparison that says which parts differ.

The store is ``$XDG_STATE_HOME/rocmbuild/fingerprints/<sha256(tree path)[:16]>.json``: outside
the tree, so no clean path, ``git clean`` or build step can touch it, and one file per tree.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmbuild import paths
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process import command as proc
from rocmbuild.verification.artifacts import verify_artifacts

# Variables that change what a build produces (not how fast): compilers, flags, CMake's inputs.
# MAX_JOBS and the like are deliberately absent: halving jobs builds the same thing.
BUILD_KNOBS = (
    "CC", "CXX", "HIPCC", "HIPCXX", "CFLAGS", "CXXFLAGS", "HIPFLAGS", "LDFLAGS", "CPPFLAGS",
    "HIPCC_COMPILE_FLAGS_APPEND", "HIPCC_LINK_FLAGS_APPEND", "CMAKE_ARGS", "CMAKE_BUILD_TYPE",
    "HIP_PLATFORM", "HIP_DEVICE_LIB_PATH", "ROCM_PATH", "ROCM_HOME", "HIP_PATH",
    "PYTORCH_ROCM_ARCH", "GPU_TARGETS", "AMDGPU_TARGETS", "CMAKE_HIP_ARCHITECTURES",
)

# Never part of a tree hash: VCS data and what building writes (besides the recipe's clean paths).
_ALWAYS_EXCLUDED_DIRS = frozenset({".git", "__pycache__", "build", "dist", ".eggs", ".deps"})
_OUTPUT_SUFFIXES = (".o", ".so", ".a", ".pyc", ".whl", ".hsaco", ".d")


@dataclass(frozen=True)
class Fingerprint:
    """The parts of a build's identity, each a short string; ``digest`` hashes them all."""

    parts: Mapping[str, str]

    @property
    def digest(self) -> str:
        blob = json.dumps(dict(sorted(self.parts.items())), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "parts": dict(self.parts)}


def differences(stored: Mapping[str, str] | None, current: Fingerprint) -> list[str]:
    """Names of the parts that differ (all of them when nothing is stored). Pure."""
    if stored is None:
        return ["no earlier success recorded for this tree"]
    names = sorted(set(stored) | set(current.parts))
    return [n for n in names if stored.get(n) != current.parts.get(n)]


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()[:16]


def _excluded(rel: str, name: str, clean: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(name, pattern) for pattern in clean)


def tree_hash(source: Path, clean_paths: tuple[str, ...]) -> str:
    """A content hash of the tree's sources: every file but the clean paths and build outputs."""
    files: list[tuple[str, Path]] = []
    for root, dirs, names in os.walk(source):
        rel_root = os.path.relpath(root, source)
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = sorted(d for d in dirs if d not in _ALWAYS_EXCLUDED_DIRS and not d.endswith(".egg-info")
                         and not _excluded(rel_root + d, d, clean_paths))
        files += [(rel_root + name, Path(root) / name) for name in sorted(names)
                  if not name.endswith(_OUTPUT_SUFFIXES) and not _excluded(rel_root + name, name, clean_paths)]
    digest = hashlib.sha256()
    for rel, path in files:
        digest.update(rel.encode() + b"\0")
        try:
            digest.update(path.read_bytes() if not path.is_symlink() else os.readlink(path).encode())
        except OSError:
            digest.update(b"<unreadable>")
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def source_identity(source: Path, clean_paths: tuple[str, ...],
                    run: proc.Run = proc.capture) -> str:
    """``git:<HEAD>+<dirty hash>`` in a git checkout (tracked changes only: build outputs are
    untracked), else ``tree:<content hash>``; ``missing`` when the tree does not exist."""
    if not source.is_dir():
        return "missing"
    if (source / ".git").exists():
        head = run(["git", "-C", str(source), "rev-parse", "HEAD"])
        if head.ok:
            diff = run(["git", "-C", str(source), "diff", "HEAD", "--no-ext-diff", "--binary"])
            dirty = _sha(diff.output) if diff.ok and diff.output.strip() else "clean"
            return f"git:{head.output.strip()}+{dirty}"
    return f"tree:{tree_hash(source, clean_paths)}"


def compiler_version(path: str | None, env: Mapping[str, str] | None = None,
                     run: proc.Run = proc.capture) -> str:
    """The compiler's version lines ("HIP version: 5.2...; Debian clang version 15.0.6"), asked in the
    build's environment (hipcc picks its platform from HIP_PLATFORM). Other lines are noise: hipcc
    also runs rocm_agent_enumerator, which prints a traceback on a host without a GPU."""
    if not path:
        return "none"
    result = run([path, "--version"], env=env)
    lines = [line.strip() for line in result.output.splitlines() if "version" in line.lower()]
    return "; ".join(dict.fromkeys(lines)) if lines else "unknown"


def compute(plan: BuildPlan, run: proc.Run = proc.capture) -> Fingerprint:
    """The fingerprint of building ``plan`` in its tree as the tree is now."""
    recipe_text = plan.recipe.path.read_bytes() if plan.recipe.path.is_file() else repr(plan.recipe).encode()
    env = plan.env
    # The recipe's arch variables hold the arch list, compared as "arch" (so a changed arch says "arch").
    arch_vars = set(plan.recipe.arch.variables)
    knobs = {k: env[k] for k in (*BUILD_KNOBS, *plan.recipe.env) if k in env and k not in arch_vars}
    compiler = plan.hip_compiler.path if plan.hip_compiler else plan.rocm_hipcc
    return Fingerprint({
        "recipe": _sha(recipe_text),
        "source": source_identity(plan.source, plan.recipe.clean_paths, run),
        "arch": ";".join(plan.archs),
        "rocm": f"{plan.rocm_root}@{plan.rocm_version}",
        "hip_compiler": f"{compiler} {compiler_version(compiler, env, run)}",
        "python": plan.python,
        "env": _sha(json.dumps(dict(sorted(knobs.items())))),
    })


def store_dir() -> Path:
    return paths.state_dir("fingerprints")


def store_path(source: Path) -> Path:
    return store_dir() / f"{_sha(str(source.resolve()))}.json"


def load(source: Path) -> dict[str, str] | None:
    """The parts of the tree's last successful build, or None (no success, or an unreadable file)."""
    try:
        data = json.loads(store_path(source).read_text(encoding="utf-8"))
        parts = data["parts"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {str(k): str(v) for k, v in parts.items()} if isinstance(parts, dict) else None


def save(source: Path, fingerprint: Fingerprint, recipe: str) -> Path:
    path = store_path(source)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"source": str(source.resolve()), "recipe": recipe, **fingerprint.to_json()},
                              indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def forget(source: Path) -> None:
    """A run that did not succeed leaves no claim that the tree is built."""
    store_path(source).unlink(missing_ok=True)


@dataclass(frozen=True)
class UpToDate:
    """The verdict of comparing a tree's last success with this command (summary's ``up_to_date``)."""

    ok: bool
    fingerprint: Fingerprint
    differs: tuple[str, ...]
    artifacts: str  # what artifact verification said ("not checked" when the fingerprint differs)

    def to_json(self) -> dict[str, Any]:
        return {"up_to_date": self.ok, "compared": dict(self.fingerprint.parts), "digest": self.fingerprint.digest,
                "differs": list(self.differs), "artifacts": self.artifacts}


def check(plan: BuildPlan, run: proc.Run = proc.capture) -> UpToDate:
    """Same fingerprint as the tree's last success *and* artifacts that still verify."""
    current = compute(plan, run)
    differs = tuple(differences(load(plan.source), current))
    if differs:
        return UpToDate(False, current, differs, "not checked")
    if not plan.recipe.verify_artifacts:
        return UpToDate(True, current, (), "the recipe names no artifacts")

    report = verify_artifacts(plan.source, plan.recipe.verify_artifacts, plan.targets, env=plan.env,
                              llvm_bin=Path(plan.tools_llvm_bin) if plan.tools_llvm_bin else None)
    return UpToDate(report.ok, current, () if report.ok else ("artifacts",), report.describe())
