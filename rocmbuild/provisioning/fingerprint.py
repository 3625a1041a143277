"""Build fingerprints: what makes a finished build "the same build" (``up_to_date``), conservatively.

Owns: computing a plan's fingerprint (recipe text, the whole tree's content, arch list, ROCm, HIP
compiler, the compilers on PATH, the interpreter and its installed packages, the environment the
build sees), storing the last success's fingerprint and outputs host-wide keyed by the tree, and
the verdict of an ``up_to_date`` check: same fingerprint, outputs on disk as the success left them,
declared artifacts still for the requested archs, and the verify step passing again.  When in
doubt, build: a tree that cannot be fingerprinted (a FIFO, a device) is never up to date.

The store is ``$XDG_STATE_HOME/rocmbuild/fingerprints/<sha256(tree path)[:16]>.json`` (and its
``.stat.json`` stat cache): outside the tree, so no clean path, ``git clean`` or build step can
touch it.  What is fingerprinted is documented in docs/fingerprint.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmbuild import paths
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.process import command as proc
from rocmbuild.provisioning import buildinputs, outputs, treehash
from rocmbuild.provisioning.reverify import run_verify
from rocmbuild.records.recordfile import as_object
from rocmbuild.verification.artifacts import Lister, verify_artifacts

Stop = Callable[[], "str | None"]
_RECORD_MAX_BYTES = 64 << 20  # a record bigger than this is not read (and so claims nothing)


def never_stop() -> str | None:
    return None


@dataclass(frozen=True)
class Fingerprint:
    """The parts of a build's identity, each a short string; ``digest`` hashes them all.

    ``tree`` is the walk behind the ``source`` part (to compare the tree before and after a build),
    ``env`` the variables compared (hashed in ``parts``; kept to name the one that changed)."""

    parts: Mapping[str, str]
    tree: treehash.TreeSnapshot | None = field(default=None, compare=False)
    env: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def digest(self) -> str:
        blob = json.dumps(dict(sorted(self.parts.items())), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()

    def to_json(self) -> dict[str, object]:
        return {"digest": self.digest, "parts": dict(self.parts)}


def differences(stored: Mapping[str, str] | None, current: Fingerprint) -> list[str]:
    """Names of the parts that differ (all of them when nothing is stored). Pure."""
    if stored is None:
        return ["no earlier success recorded for this tree"]
    names = sorted(set(stored) | set(current.parts))
    return [n for n in names if stored.get(n) != current.parts.get(n)]


def env_differences(salt: str, stored: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """The names of the variables added, removed or changed since the stored hashes. Pure."""
    now = buildinputs.value_hashes(current, salt)
    return sorted(n for n in set(stored) | set(now) if stored.get(n) != now.get(n))


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()[:16]


def _ignored_variables(plan: BuildPlan) -> tuple[str, ...]:
    """Compared elsewhere (the arch list) or sized by rocmbuild from free memory (halving jobs builds
    the same thing)."""
    return (*plan.recipe.arch.variables, *plan.recipe.resources.job_variables, "MAX_JOBS")


def compute(plan: BuildPlan, run: proc.Run = proc.capture, stop: Stop = never_stop) -> Fingerprint:
    """The fingerprint of building ``plan`` in its tree as the tree is now (``treehash.Stopped`` on ``stop``)."""
    recipe_text = plan.recipe.path.read_bytes() if plan.recipe.path.is_file() else repr(plan.recipe).encode()
    env = plan.env
    if plan.source.is_dir():
        tree = treehash.snapshot(plan.source, plan.recipe.clean_paths,
                                 treehash.StatCache(stat_cache_path(plan.source)), stop)
        source = f"tree:{tree.digest}" if tree.cacheable else f"not cacheable: {'; '.join(tree.special[:3])}"
    else:
        tree, source = treehash.TreeSnapshot({}, ("the tree is missing",)), "missing"
    compared = buildinputs.build_environment(env, _ignored_variables(plan))
    interp = buildinputs.interpreter(plan.python or "python3", env, plan.recipe.packages, run)
    packages = interp.pop("packages", None)
    compiler = plan.hip_compiler.path if plan.hip_compiler else plan.rocm_hipcc
    return Fingerprint({
        "recipe": _sha(recipe_text),
        "source": source,
        "arch": ";".join(plan.archs),
        "rocm": f"{plan.rocm_root}@{plan.rocm_version}",
        "hip_compiler": f"{compiler} {compiler_version(compiler, env, run)}",
        "compilers": buildinputs.compilers(env, run),
        "python": f"{interp.get('executable')} {str(interp.get('version', interp.get('error', ''))).split()[0]}"
                  f" ({_sha(json.dumps(interp, sort_keys=True))})",
        "packages": (f"{len(packages)} installed ({_sha(json.dumps(packages))})" if isinstance(packages, list)
                     else "unknown"),
        "env": _sha(json.dumps(sorted(compared.items()))),
    }, tree, compared)


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


# --- the store ----------------------------------------------------------------------------------------

def store_dir() -> Path:
    return paths.state_dir("fingerprints")


def store_path(source: Path) -> Path:
    return store_dir() / f"{_sha(str(source.resolve()))}.json"


def stat_cache_path(source: Path) -> Path:
    return store_dir() / f"{_sha(str(source.resolve()))}.stat.json"


def load_record(source: Path) -> dict[str, object] | None:
    """The tree's last success (parts, outputs, env hashes), or None: none, or unreadable, or damaged."""
    try:
        path = store_path(source)
        if path.stat().st_size > _RECORD_MAX_BYTES:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("parts"), dict):
        return None
    return data


def load(source: Path) -> dict[str, str] | None:
    """The parts of the tree's last successful build, or None."""
    data = load_record(source)
    return {str(k): str(v) for k, v in as_object(data.get("parts")).items()} if data is not None else None


def save(source: Path, fingerprint: Fingerprint, recipe: str, built: outputs.Outputs | None = None,
         verify_env: Mapping[str, str] | None = None) -> Path:
    """The success's record; ``verify_env``: what the ladder's remedies set (e.g. LD_LIBRARY_PATH), which
    the verify step needs again before an up_to_date claim."""
    path = store_path(source)
    path.parent.mkdir(parents=True, exist_ok=True)
    salt = os.urandom(8).hex()
    record = {"source": str(source.resolve()), "recipe": recipe, **fingerprint.to_json(),
              "outputs": built.to_json() if built is not None else None,
              "verify_env": dict(verify_env or {}), "env_salt": salt,
              "env_hashes": buildinputs.value_hashes(fingerprint.env, salt)}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)
    return path


def forget(source: Path) -> None:
    """A run that did not succeed leaves no claim that the tree is built."""
    store_path(source).unlink(missing_ok=True)


# --- the verdict --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class UpToDate:
    """The verdict of comparing a tree's last success with this command (summary's ``up_to_date``)."""

    ok: bool
    fingerprint: Fingerprint
    differs: tuple[str, ...]
    artifacts: str  # what the outputs, artifacts and verify checks said ("not checked" when the fingerprint differs)

    def to_json(self) -> dict[str, object]:
        return {"up_to_date": self.ok, "compared": dict(self.fingerprint.parts), "digest": self.fingerprint.digest,
                "differs": list(self.differs), "artifacts": self.artifacts}


def _named_differences(record: dict[str, Any] | None, current: Fingerprint) -> tuple[str, ...]:
    differs = differences(None if record is None else {str(k): str(v) for k, v in record["parts"].items()},
                          current)
    if "env" in differs and record is not None:
        salt, hashes = record.get("env_salt"), record.get("env_hashes")
        if isinstance(salt, str) and isinstance(hashes, dict):
            names = env_differences(salt, {str(k): str(v) for k, v in hashes.items()}, current.env)
            if names:
                more = f" (+{len(names) - 5} more)" if len(names) > 5 else ""
                differs = [f"env: {', '.join(names[:5])}{more}" if d == "env" else d for d in differs]
    return tuple(differs)


def check(plan: BuildPlan, run: proc.Run = proc.capture, stop: Stop = never_stop,
          verify_again: bool = True) -> UpToDate:
    """Same fingerprint as the tree's last success, its outputs as it left them, artifacts that still
    verify and the verify step passing again; anything short of all that builds."""
    current = compute(plan, run, stop)
    if current.tree is not None and not current.tree.cacheable:
        return UpToDate(False, current, ("not cacheable",), "not checked")
    record = load_record(plan.source)
    differs = _named_differences(record, current)
    if differs or record is None:
        return UpToDate(False, current, differs or ("no record",), "not checked")
    recorded = outputs.Outputs.from_json(record.get("outputs"))
    if recorded is None:
        return UpToDate(False, current, ("outputs",), "the last success recorded no outputs")
    now = outputs.collect(plan.source, plan.recipe.verify_artifacts, plan.recipe.clean_paths)
    changed = outputs.differences(recorded, now)
    if changed:
        return UpToDate(False, current, ("outputs",), f"{now.kind} not as the last success left them: {changed}")
    said = [f"{now.kind}: {len(now.files)} file(s) as the last success left them" if now.kind != "none"
            else "no outputs declared (no artifacts, no clean paths)"]
    if plan.recipe.verify_artifacts:
        report = verify_artifacts(plan.source, plan.recipe.verify_artifacts, plan.targets, Lister(
                                  env=plan.env, llvm_bin=Path(plan.tools_llvm_bin) if plan.tools_llvm_bin else None))
        if not report.ok:
            return UpToDate(False, current, ("artifacts",), report.describe())
        said.append(report.describe())
    if not verify_again:  # --force builds anyway: the verify step would only cost time
        return UpToDate(True, current, (), "; ".join([*said, "verify not run again (--force)"]))
    remedied = record.get("verify_env")
    env = {**plan.env, **({str(k): str(v) for k, v in remedied.items()} if isinstance(remedied, dict) else {})}
    verified = run_verify(plan.recipe.steps.verify, plan.source, env, stop)
    if not verified.ok:
        return UpToDate(False, current, ("verify",), verified.detail)
    said.append(verified.detail)
    return UpToDate(True, current, (), "; ".join(said))
