"""Torch integrity: what the installed torch is, and whether a build against it can work.

Owns the facts about the build interpreter's torch (HIP version, arch list,
torchvision/torchaudio versions, setuptools version), read in one subprocess,
and the pure checks on them (the largest class of 2024-26 build
failures: the wrong or a mismatched torch in the build environment).  Each
failed check names exactly what to install.  ``preflight.check_torch_rocm``
still decides whether torch is a ROCm build at all; these run after it.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocmbuild.checks.preflight import FAIL, OK, WARN, Check, _last_json
from rocmbuild.host.arch import Targets, processor_of
from rocmbuild.process import command as proc

WHEEL_INDEX = "https://download.pytorch.org/whl"

# importlib.metadata for the companions and setuptools: importing torchvision is slow and can fail
# for the very skew this checks; the version is what decides.
_PROBE = """
import json, sys
from importlib import metadata
def dist(name):
    try:
        return metadata.version(name)
    except Exception:
        return None
out = {"vision": dist("torchvision"), "audio": dist("torchaudio"), "setuptools": dist("setuptools")}
try:
    import torch
    out["version"] = torch.__version__
    out["hip"] = getattr(torch.version, "hip", None)
    try:
        out["archs"] = list(torch.cuda.get_arch_list())
    except Exception as exc:
        out["archs_error"] = type(exc).__name__ + ": " + str(exc)
except BaseException as exc:
    out["error"] = type(exc).__name__ + ": " + str(exc)
print(json.dumps(out))
"""


@dataclass(frozen=True)
class TorchFacts:
    """The build interpreter's torch and its companions (None: not installed / not reported)."""

    python: str
    version: str | None
    hip: str | None
    archs: tuple[str, ...] | None
    vision: str | None
    audio: str | None
    setuptools: str | None


def probe(python: str, env: Mapping[str, str] | None = None, run: proc.Run = proc.capture) -> TorchFacts | None:
    """Read the facts with ``python``; None when the interpreter does not run at all."""
    result = run([python, "-c", _PROBE], env=dict(os.environ if env is None else env))
    info = _last_json(result.output)
    if result.missing or info is None:
        return None
    raw = info.get("archs")
    archs = tuple(str(a) for a in raw) if isinstance(raw, list) else None

    def text(key: str) -> str | None:
        value = info.get(key)
        return str(value) if value else None

    return TorchFacts(python, text("version"), text("hip"), archs, text("vision"), text("audio"),
                      text("setuptools"))


def major_minor(version: str | None) -> str | None:
    """'6.2.41133-dd7f95766' -> '6.2'; None when it does not start with two numbers."""
    match = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return f"{match[1]}.{match[2]}" if match else None


def rocm_tag(version: str | None) -> str | None:
    """The ROCm release a wheel's local version names: '2.5.1+rocm6.2' -> '6.2'."""
    match = re.search(r"\+rocm(\d+\.\d+)", version or "")
    return match[1] if match else None


def _local(version: str | None) -> str | None:
    return version.split("+", 1)[1] if version and "+" in version else None


def install_line(python: str, rocm: str, packages: Sequence[str] = ("torch", "torchvision", "torchaudio")) -> str:
    return (f"{shlex.quote(python)} -m pip install --force-reinstall {' '.join(packages)} "
            f"--index-url {WHEEL_INDEX}/rocm{rocm}")


def check_hip_version(facts: TorchFacts, rocm_version: str | None) -> Check:
    """torch.version.hip against the system ROCm, major.minor (pytorch#118457, bitsandbytes#1878)."""
    name = "torch HIP version"
    torch_mm, host_mm = major_minor(facts.hip), major_minor(rocm_version)
    if torch_mm is None or host_mm is None:
        return Check(name, WARN, f"torch HIP {facts.hip or 'unknown'}, system ROCm {rocm_version or 'unknown'}: "
                     "cannot compare", todo="make sure torch was built for this ROCm", fatal=False)
    detail = f"torch {facts.version} was built with HIP {facts.hip}; the system ROCm is {rocm_version}"
    if torch_mm == host_mm:
        return Check(name, OK, detail)
    return Check(name, FAIL, detail + f": extensions built here would link ROCm {host_mm} against a "
                 f"torch for ROCm {torch_mm}",
                 todo=f"install a torch for ROCm {host_mm}: {install_line(facts.python, host_mm)} "
                      f"(or build the torch recipe; or pass --rocm-path to a ROCm {torch_mm})",
                 category="abi_mismatch")


def check_arch_list(facts: TorchFacts, archs: Targets) -> Check:
    """torch.cuda.get_arch_list() covers every requested arch (its kernels exist for them)."""
    name = "torch arch list"
    if facts.archs is None:
        return Check(name, WARN, f"torch {facts.version} reports no arch list (torch.cuda.get_arch_list failed)",
                     todo="check that torch is a ROCm build for these GPUs", fatal=False)
    have = {processor_of(a) for a in facts.archs}   # torch's own list, as torch prints it
    missing = [a for a in archs.processors if a not in have]
    detail = f"torch {facts.version} has kernels for {', '.join(facts.archs) or 'no arch'}"
    if not missing:
        return Check(name, OK, detail)
    wanted = ";".join(archs.processors)
    return Check(name, FAIL, f"{detail}; not for {', '.join(missing)}",
                 todo=f"build torch for them: `rocmbuild torch --arch '{wanted}'` (PYTORCH_ROCM_ARCH), "
                      f"or install a torch wheel whose arch list includes {', '.join(missing)}",
                 category="arch_mismatch")


def check_companions(facts: TorchFacts) -> Check:
    """torch, torchvision, torchaudio from one build: their +rocmX.Y local versions agree (ROCm/vllm#943)."""
    name = "torch companions"
    installed = {n: v for n, v in (("torchvision", facts.vision), ("torchaudio", facts.audio)) if v}
    detail = ", ".join([f"torch {facts.version}"] + [f"{n} {v}" for n, v in installed.items()])
    if not installed:
        return Check(name, OK, f"{detail} (no torchvision/torchaudio installed)")
    torch_rocm = rocm_tag(facts.version)
    if torch_rocm:
        # A companion without the same +rocmX.Y is a CUDA/CPU wheel from PyPI or another ROCm's.
        skewed = [n for n, v in installed.items() if rocm_tag(v) != torch_rocm]
    else:
        # torch built from source ("+git..."): only a companion from a prebuilt CUDA/CPU/ROCm index is wrong.
        skewed = [n for n, v in installed.items() if re.match(r"(cu\d|cpu|rocm)", _local(v) or "")]
    if not skewed:
        return Check(name, OK, detail)
    if torch_rocm:
        todo = f"reinstall them from torch's build: {install_line(facts.python, torch_rocm, skewed)} --no-deps"
    else:
        todo = (f"torch is a source build: build {' and '.join(skewed)} from source against it "
                f"(pip install --no-build-isolation), "
                f"or `{shlex.quote(facts.python)} -m pip uninstall -y {' '.join(skewed)}`")
    return Check(name, FAIL, f"{detail}: not from one build ({', '.join(skewed)} differ)", todo=todo,
                 category="abi_mismatch")


_DEVELOP = re.compile(r"\bsetup\.py\s+(?:\S+\s+)*develop\b")


def uses_setup_develop(steps: Sequence[str]) -> bool:
    return any(_DEVELOP.search(step) for step in steps)


def check_setuptools(facts: TorchFacts, steps: Sequence[str], prepare_installs: bool) -> Check | None:
    """setuptools >= 80 turns `setup.py develop` into `pip install -e` (vllm#17320); None: no develop step."""
    if not uses_setup_develop(steps):
        return None
    name = "setuptools"
    fix = f"{shlex.quote(facts.python)} -m pip install 'setuptools<80'"
    version = facts.setuptools
    match = re.match(r"(\d+)", version or "")
    if not match:
        return Check(name, FAIL, f"setuptools is not installed for {facts.python} and a step runs setup.py develop",
                     todo=fix, category="missing_python_dependency",
                     fatal=not prepare_installs)
    detail = f"setuptools {version} with a `setup.py develop` step"
    if int(match[1]) < 80:
        return Check(name, OK, detail)
    detail += ": setuptools >= 80 runs it as `pip install -e`, with build isolation (vllm#17320)"
    if prepare_installs:
        # vLLM's own build requirements pin setuptools<80: the prepare step may fix it; checked again in the log.
        return Check(name, WARN, detail + " (the prepare step installs packages and may pin it)",
                     todo=fix, fatal=False)
    return Check(name, FAIL, detail, todo=fix,
                 category="missing_python_dependency")


def _installs_the_tree(segment: str) -> bool:
    """`pip install [opts] .` / `-e .` / `.[extra]`, without --no-build-isolation."""
    try:
        words = shlex.split(segment)
    except ValueError:
        words = segment.split()
    for i, word in enumerate(words[:-1]):
        if word in ("pip", "pip3") or word.endswith("/pip"):
            if words[i + 1] != "install":
                continue
            args = words[i + 2:]
            local = any(a == "." or a.startswith((".[", "./")) for a in args)
            return local and "--no-build-isolation" not in args
    return False


def isolated_installs(steps: Sequence[str]) -> list[str]:
    """Steps that `pip install .` (or `-e .`) the tree with build isolation on."""
    return [s for s in steps if "PIP_NO_BUILD_ISOLATION" not in s
            and any(_installs_the_tree(part) for part in re.split(r"&&|\|\||;|\|", s))]


def check_build_isolation(steps: Sequence[str]) -> Check:
    """A torch-requiring build must see the installed torch: isolation resolves a CUDA torch (vllm#38614)."""
    name = "build isolation"
    bad = isolated_installs(steps)
    if not bad:
        return Check(name, OK, "no `pip install .` step with build isolation")
    fixed = re.sub(r"\bpip3?\s+install\b", lambda m: m[0] + " --no-build-isolation", bad[0], count=1)
    return Check(name, FAIL, f"step `{bad[0]}` installs with build isolation: pip resolves torch from the "
                 "index (a CUDA build) instead of the installed ROCm torch",
                 todo=f"change the recipe's step to `{fixed}` (and install the build requirements first)",
                 category="abi_mismatch")


@dataclass(frozen=True, kw_only=True)
class TorchUse:
    """The build torch must fit: the host's ROCm version, the GPU targets, the prepare and build
    commands, and whether the prepare step installs packages."""

    rocm_version: str | None
    archs: Targets
    steps: Sequence[str]
    prepare_installs: bool


def integrity_checks(python: str, env: Mapping[str, str], use: TorchUse, *,
                     run: proc.Run = proc.capture) -> list[Check]:
    """All torch integrity checks for a torch-requiring recipe (nothing about torch when it is not importable)."""
    rocm_version, archs, steps, prepare_installs = use.rocm_version, use.archs, use.steps, use.prepare_installs
    checks = [check_build_isolation(steps)]
    facts = probe(python, env, run)
    if facts is None or facts.version is None or not facts.hip:
        return checks   # check_torch_rocm already says what is wrong with torch itself
    checks += [check_hip_version(facts, rocm_version), check_arch_list(facts, archs), check_companions(facts)]
    setuptools = check_setuptools(facts, steps, prepare_installs)
    if setuptools is not None:
        checks.append(setuptools)
    return checks

