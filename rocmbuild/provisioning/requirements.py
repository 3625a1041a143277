"""`--requires-from URL_OR_DIR`: satisfy a recipe's `requires` from a wheel index or wheelhouse.

Owns: turning the option into pip arguments, installing the missing required packages into the
build's interpreter before the build (or, for `plan`/`--dry-run`, only resolving them with
`pip install --dry-run --report`, which installs nothing), and checking the result: a required
torch must be a ROCm build whose HIP major version is the host ROCm's (`torch.version.hip`).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmbuild.errors import UsageError
from rocmbuild.planning.plan import BuildPlan
from rocmbuild.planning.recipe import find_recipe
from rocmbuild.planning.torchadvice import torch_install
from rocmbuild.process import command as proc
from rocmbuild.records.redact import redact_text

ROCM_TORCH_INDEX = "https://download.pytorch.org/whl/rocm6.4"
_URL = re.compile(r"^(https?|file)://", re.IGNORECASE)
_INSTALL_TIMEOUT_S = 3 * 3600.0  # a ROCm torch wheel is several GB


class RequirementError(UsageError):
    """A `requires` that --requires-from could not satisfy, or satisfied with the wrong build (exit 2)."""


@dataclass(frozen=True)
class Provided:
    """One required package found (plan) or installed (build) from --requires-from."""

    recipe: str
    package: str
    version: str
    source: str
    installed: bool  # False in plan mode: it would be installed
    hip: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"recipe": self.recipe, "package": self.package, "version": self.version, "from": self.source,
                "installed": self.installed, "hip": self.hip}




def shown(source: str) -> str:
    """The source as consoles and errors may show it: credentials in a URL (`user:token@`, `?token=`) hidden,
    the same way as in every record (records/redact.py). Pure."""
    return redact_text(source)


def pip_source_args(requires_from: str) -> list[str]:
    """pip's arguments for an index URL (`--index-url`) or a local wheelhouse (`--no-index --find-links`)."""
    if _URL.match(requires_from):
        return ["--index-url", requires_from]
    directory = Path(requires_from).expanduser()
    if not directory.is_dir():
        raise RequirementError(f"--requires-from {shown(requires_from)}: no such directory, and not a URL",
                               why="it must be a wheel index URL (https://...) or a directory of wheels",
                               todo=f"pass e.g. --requires-from {ROCM_TORCH_INDEX} or the wheelhouse directory")
    return ["--no-index", "--find-links", str(directory.resolve())]


def major(version: str | None) -> str | None:
    match = re.match(r"\s*(\d+)", version or "")
    return match.group(1) if match else None


def rocm_label(version: str) -> str | None:
    """``6.2`` from a wheel version's local label (``2.5.1+rocm6.2``); None when it names no ROCm."""
    match = re.search(r"\+.*?rocm(\d+(?:\.\d+)*)", version)
    return match.group(1) if match else None


def torch_problem(hip: str | None, host_rocm: str | None, what: str) -> str | None:
    """Why this torch cannot be built against on this host, or None. Pure."""
    if not hip:
        return f"{what} is not a ROCm build (torch.version.hip is empty: a CPU or CUDA wheel)"
    if host_rocm and major(hip) != major(host_rocm):
        return f"{what} is built for ROCm {hip}, but this host has ROCm {host_rocm} (major versions differ)"
    return None


def _packages(required: str) -> tuple[str, ...]:

    return find_recipe(required).packages or (required,)


def _tail(output: str, lines: int = 6) -> str:
    return " | ".join(line.strip() for line in output.strip().splitlines()[-lines:])


def provide(plan: BuildPlan, required: Sequence[str], requires_from: str, install: bool,
            run: proc.Run = proc.capture) -> list[Provided]:
    """Resolve (plan) or install (build) each required recipe's packages into ``plan.python``."""
    source_args = pip_source_args(requires_from)
    provided: list[Provided] = []
    for name in required:
        packages = _packages(name)
        with tempfile.TemporaryDirectory(prefix="rocmbuild-requires-") as tmp:
            report_file = Path(tmp) / "report.json"
            argv = [plan.python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
                    "--report", str(report_file), *source_args, *packages]
            if not install:
                argv[4:4] = ["--dry-run", "--ignore-installed"]
            before = _distributions(plan, run) if install else None
            result = run(argv, env={**plan.env, "PIP_NO_INPUT": "1"}, timeout=_INSTALL_TIMEOUT_S)
            # An index pip could not reach says nothing about what it lacks: that stays pip's own message.
            absent = missing_distribution(result.output) if not result.ok and not _UNREACHABLE.search(
                result.output) else None
            if absent is not None:
                lacks = (f"it has no {absent}" if absent.lower() in {p.lower() for p in packages}
                         else f"it has no {absent}, which {packages[0]} needs")
                raise RequirementError(
                    f"could not {'install' if install else 'resolve'} {', '.join(packages)} (required by "
                    f"'{plan.recipe.name}') from {shown(requires_from)}: {lacks}",
                    why=f"pip found no distribution of {absent} there (a dependency of {packages[0]})",
                    todo=f"add {absent} to the wheelhouse (`{plan.python} -m pip download {absent} -d DIR` on a "
                         "machine with network, for this Python and platform), or point --requires-from at an "
                         f"index that has it; check with `{plan.python} -m pip download --no-deps "
                         f"{shown(' '.join(source_args))} {absent}`")
            if not result.ok:
                raise RequirementError(
                    f"could not {'install' if install else 'resolve'} {', '.join(packages)} (required by "
                    f"'{plan.recipe.name}') from {shown(requires_from)}",
                    why=f"pip said: {shown(_tail(result.output))}",
                    todo="check that the index or wheelhouse has a wheel for this Python and platform "
                         f"(`{plan.python} -m pip download --no-deps {shown(' '.join(source_args))} {packages[0]}`)")
            try:
                report = json.loads(report_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                report = {}
        versions = {str(item.get("metadata", {}).get("name", "")).lower(): str(item.get("metadata", {}).get(
            "version", "")) for item in report.get("install", [])}
        for package in packages:
            version = versions.get(package.lower(), "already installed")
            hip = _installed_hip(plan, run) if install and package == "torch" else (
                rocm_label(version) if package == "torch" else None)
            if package == "torch":
                what = f"torch {version} from {shown(requires_from)}"
                problem = torch_problem(hip, plan.rocm_version, what)
                if problem and install:
                    # Leave the interpreter as it was: a wrong torch installed would hide the refusal
                    # from the next run's requires check, and what it pulled in would stay half-installed.
                    pulled = [name for name in versions if before is not None and name not in before]
                    gone = sorted({package.lower(), *pulled})
                    run([plan.python, "-m", "pip", "uninstall", "-y", "-q", *gone], env=plan.env)
                    problem += f" (uninstalled again, with what it pulled in: {', '.join(gone)})"
                if problem:
                    raise RequirementError(
                        problem, why=f"'{plan.recipe.name}' builds against torch: its HIP code must match the "
                                     "host's ROCm",
                        todo=f"point --requires-from at ROCm {major(plan.rocm_version) or 'X'}.x wheels, or "
                             f"build torch first (`rocmbuild torch {plan.recipe.name}`); for this source: "
                             + torch_install(plan.python, plan.source, plan.rocm_version)
                    )
            provided.append(Provided(plan.recipe.name, package, version, shown(requires_from), install, hip))
    return provided


_UNREACHABLE = re.compile(r"Could not fetch URL|Failed to establish a new connection|Max retries exceeded|"
                          r"Connection refused|Name or service not known|Temporary failure in name resolution")
_NO_DISTRIBUTION = re.compile(r"No matching distribution found for ([A-Za-z0-9][A-Za-z0-9._-]*)")


# pip's resolver, when several candidates all need what is missing, says it this way instead.
_NO_DISTRIBUTION_AVAILABLE = re.compile(r"have no matching distributions available for your environment:\s*\n"
                                        r"\s+([A-Za-z0-9][A-Za-z0-9._-]*)")


# ...or only as the one dependency every candidate has in common ("The conflict is caused by:
#     torch 2.13.0+cpu depends on filelock / torch 2.8.0+rocm6.3 depends on filelock").
_CONFLICT = re.compile(r"The conflict is caused by:\s*\n((?:[ \t]+\S.*\n?)+)")
_DEPENDS_ON = re.compile(r"depends on ([A-Za-z0-9][A-Za-z0-9._-]*)")


def missing_distribution(output: str) -> str | None:
    """The requirement pip could not find (``No matching distribution found for filelock``), or None. Pure."""
    match = _NO_DISTRIBUTION.search(output) or _NO_DISTRIBUTION_AVAILABLE.search(output)
    if match:
        return match.group(1)
    conflict = _CONFLICT.search(output)
    if conflict:
        names = {m.lower() for m in _DEPENDS_ON.findall(conflict.group(1))}
        if len(names) == 1:
            return names.pop()
    return None


_LIST = "import importlib.metadata as m, json; print(json.dumps(sorted({d.metadata['Name'].lower() for d in " \
        "m.distributions() if d.metadata['Name']})))"


def _distributions(plan: BuildPlan, run: proc.Run) -> set[str] | None:
    """Names of the distributions installed for the build's interpreter (lower case), None if unknown."""
    result = run([plan.python, "-c", _LIST], env=plan.env)
    try:
        return set(json.loads(result.output.strip().splitlines()[-1])) if result.ok else None
    except (ValueError, IndexError):
        return None


def _installed_hip(plan: BuildPlan, run: proc.Run) -> str | None:
    """``torch.version.hip`` of the torch now installed for the build's interpreter."""
    code = "import json, torch; print(json.dumps(getattr(torch.version, 'hip', None)))"
    result = run([plan.python, "-c", code], env=plan.env)
    if not result.ok:
        raise RequirementError(f"torch was installed into {plan.python} but does not import",
                               why=_tail(result.output),
                               todo="install a torch that imports on this host (a ROCm library missing at load "
                                    "time needs the ROCm runtime installed)")
    try:
        value = json.loads(result.output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return str(value) if value else None


def satisfy(missing: Sequence[Any], plans: Sequence[BuildPlan], requires_from: str, install: bool,
            run: proc.Run = proc.capture) -> list[Provided]:
    """Every missing ``requires`` (planning.MissingRequire) from --requires-from, recipe by recipe."""
    provided: list[Provided] = []
    for plan in plans:
        wanted = [m.required for m in missing if m.recipe == plan.recipe.name]
        if wanted:
            provided += provide(plan, wanted, requires_from, install, run)
    return provided


def describe(item: Provided) -> str:
    verb = "installed" if item.installed else "would install"
    hip = f" (HIP {item.hip})" if item.hip else ""
    return f"{verb} {item.package} {item.version}{hip} from {item.source} for '{item.recipe}'"
