"""GPU targets: the typed values (``GpuTarget``, ``Targets``), parsed and validated once from
what a person typed (target-ID features, product names), and local detection.

Everything here is pure except ``detect_local_archs``, whose inputs (the sysfs
directory, the command runner, the environment) are injectable so tests can
feed it fake trees and fake command output.

Facts followed (docs/rocm-facts.md): target IDs may carry ``sramecc``/``xnack`` features;
recipes get plain names because vLLM silently drops suffixed ones; the KFD
topology's ``gfx_target_version`` is decimal major, minor and stepping with the
last two written in hex in the gfx name; ``HSA_OVERRIDE_GFX_VERSION`` makes the
runtime pretend to be another target.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from rocmbuild.errors import ArchError
from rocmbuild.process import command as proc
from rocmbuild.process.command import CommandResult

# Targets the AMDGPU backend knows that matter for ROCm builds.  A table can lag
# behind the compiler: detection accepts well-formed names that are not in it
# (with a warning); only names typed by the user must be in it.
KNOWN_TARGETS: tuple[str, ...] = (
    "gfx803",
    "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
    "gfx940", "gfx941", "gfx942", "gfx950",
    "gfx1010", "gfx1011", "gfx1012", "gfx1013",
    "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
    "gfx1100", "gfx1101", "gfx1102", "gfx1103",
    "gfx1150", "gfx1151", "gfx1152", "gfx1153",
    "gfx1200", "gfx1201",
    "gfx9-generic", "gfx9-4-generic", "gfx10-1-generic", "gfx10-3-generic",
    "gfx11-generic", "gfx12-generic",
)
_KNOWN = frozenset(KNOWN_TARGETS)

# Which targets accept which target-ID features (LLVM AMDGPUUsage): xnack exists on
# GFX9 and GFX10.1, sramecc only on the compute parts.  clang rejects the others
# with "invalid target ID", so catching it here saves a long configure.
_XNACK = frozenset({
    "gfx803", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
    "gfx940", "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012", "gfx1013",
    "gfx9-generic", "gfx9-4-generic", "gfx10-1-generic",
})
_SRAMECC = frozenset({"gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx9-4-generic"})
FEATURES: dict[str, frozenset[str]] = {"sramecc": _SRAMECC, "xnack": _XNACK}

# Product name -> gfx target.  Display names are what error messages quote.
PRODUCTS: dict[str, str] = {
    "MI300X": "gfx942", "MI300A": "gfx942", "MI300": "gfx942", "MI325X": "gfx942",
    "MI350X": "gfx950", "MI355X": "gfx950",
    "MI250": "gfx90a", "MI250X": "gfx90a", "MI210": "gfx90a",
    "MI100": "gfx908",
    "MI50": "gfx906", "MI60": "gfx906", "Radeon VII": "gfx906",
    "RX 7900 XTX": "gfx1100", "RX 7900 XT": "gfx1100", "RX 7900 GRE": "gfx1100", "RX 7900": "gfx1100",
    "PRO W7900": "gfx1100", "PRO W7800": "gfx1100",
    "RX 7800 XT": "gfx1101", "RX 7800": "gfx1101", "RX 7700 XT": "gfx1101", "RX 7700": "gfx1101",
    "RX 7600 XT": "gfx1102", "RX 7600": "gfx1102",
    "RX 9070 XT": "gfx1201", "RX 9070": "gfx1201",
    "RX 9060 XT": "gfx1200", "RX 9060": "gfx1200",
    "RX 6800 XT": "gfx1030", "RX 6800": "gfx1030", "RX 6900 XT": "gfx1030", "RX 6900": "gfx1030",
    "RX 6950 XT": "gfx1030",
    "Strix Point": "gfx1150", "Strix Halo": "gfx1151",
}

# iGPUs that ride along on desktop CPUs: building for them is rarely intended.
_DISPLAY_IGPUS = frozenset({"gfx90c", "gfx1035", "gfx1036"})

_PRODUCT_NOISE = re.compile(r"^(amd|radeon|instinct|pro)+")
_GFX_RE = re.compile(r"^gfx(?:[0-9]{1,2}[0-9a-f]{2}|[0-9]{1,2}(?:-[0-9])?-generic)$")
_CUDA_RE = re.compile(r"^(?:sm|compute|lto)_\d+[a-z]?$|^\d\.\d\+?(?:ptx|PTX)?$")
_ISA_PREFIX = "amdgcn-amd-amdhsa--"

SYSFS_NODES = Path("/sys/class/kfd/kfd/topology/nodes")

_DEFAULT_TODO = (
    "pass gfx target names such as gfx942 (MI300X), gfx950 (MI355X), gfx90a (MI250/MI210), "
    "gfx1100 (RX 7900), or `auto` to detect the local GPUs"
)


def _norm_product(text: str) -> str:
    key = re.sub(r"[\s_\-]+", "", text.lower())
    return _PRODUCT_NOISE.sub("", key)


_PRODUCT_KEYS: dict[str, str] = {_norm_product(name): name for name in PRODUCTS}


def product_target(text: str) -> tuple[str, str] | None:
    """(display name, gfx target) for a product name such as ``mi300x`` or ``RX 7900 XTX``."""
    name = _PRODUCT_KEYS.get(_norm_product(text))
    return (name, PRODUCTS[name]) if name else None


@dataclass(frozen=True)
class GpuTarget:
    """A target ID, parsed: ``gfx90a:xnack+`` is processor ``gfx90a`` with features ``("xnack+",)``.

    Features are in canonical (alphabetical) order; ``str()`` is the target ID the compiler takes.
    """

    processor: str
    features: tuple[str, ...] = ()

    def __str__(self) -> str:
        return ":".join((self.processor, *self.features))

    @classmethod
    def parse(cls, text: str) -> GpuTarget:
        """One target ID typed by a person (validated; ArchError names what is wrong)."""
        return parse_target(text)

    def plain(self) -> GpuTarget:
        """The processor alone (``gfx90a:xnack+`` -> ``gfx90a``): code for it runs either way."""
        return GpuTarget(self.processor)


@dataclass(frozen=True)
class Targets:
    """The GPU targets of a build, parsed once (no duplicates, in the order given).

    Carried by the plan; consumers ask it for the forms they need instead of re-parsing
    strings: ``names`` (target IDs, the contract's ``"arch"`` strings), ``processors`` (plain
    gfx names, what code objects and torch's arch list are compared by), ``as_env`` (the
    value of the recipe's arch variables).
    """

    items: tuple[GpuTarget, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Targets:
        """``gfx942;gfx90a:xnack+, gfx1100`` (comma or semicolon separated), validated."""
        return parse_arch_list(text)

    def __iter__(self) -> Iterator[GpuTarget]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def names(self) -> tuple[str, ...]:
        """Target IDs as given (``gfx942``, ``gfx90a:xnack+``): what records and JSON show."""
        return tuple(str(t) for t in self.items)

    @property
    def processors(self) -> tuple[str, ...]:
        """Plain gfx names, deduplicated in order (``gfx90a:xnack+`` and ``gfx90a`` are one)."""
        return tuple(dict.fromkeys(t.processor for t in self.items))

    def as_env(self, separator: str = ";") -> str:
        """The value of an arch variable (PYTORCH_ROCM_ARCH, CMAKE_HIP_ARCHITECTURES, ...)."""
        return separator.join(self.names)

    def only(self, processors: Iterable[str]) -> Targets:
        """The targets whose processor is one of ``processors`` (order kept)."""
        keep = set(processors)
        return Targets(tuple(t for t in self.items if t.processor in keep))


# A gfx processor name inside other text (bundle entry IDs, configure lines): the generic
# family names first (``gfx9-4-generic``), else hex digits up to a non-word character.
_GFX_IN_TEXT = re.compile(r"\b(gfx[0-9]+(?:-[0-9]+)*-generic|gfx[0-9a-f]+)(?![0-9A-Za-z_])")


def processors_in(text: str) -> list[str]:
    """Every gfx processor name some tool wrote in ``text``, in order (not validated)."""
    return _GFX_IN_TEXT.findall(text)


def processor_of(name: str) -> str:
    """The processor in a target ID some tool printed (torch's arch list, a detected GPU):
    ``gfx942:sramecc+:xnack-`` -> ``gfx942``.  Not validated: tools may know newer targets."""
    return name.strip().split(":", 1)[0]


def is_auto(text: str) -> bool:
    return text.strip().lower() == "auto"


def _close_matches(name: str) -> list[str]:
    import difflib  # only for a name that is no target (~1 ms of import on the way to every build)

    probes = [name]
    if not name.startswith("gfx"):
        probes.append("gfx" + re.sub(r"[^0-9a-z]", "", name))
    found: list[str] = []
    for probe in probes:
        for match in difflib.get_close_matches(probe, KNOWN_TARGETS, n=3, cutoff=0.6):
            if match not in found:
                found.append(match)
    return found[:3]


def _unknown_name(item: str, name: str) -> ArchError:
    product = product_target(item)
    if product:
        display, gfx = product
        return ArchError(
            f"{display} is a product; its gfx target is {gfx}",
            "--arch takes gfx target names (the ISA the compiler builds for), not product names",
            f"use --arch {gfx}",
        )
    if _CUDA_RE.match(item):
        return ArchError(
            f"{item} is an NVIDIA CUDA arch, not an AMD gfx target",
            "rocmbuild builds for AMD GPUs through ROCm/HIP; CUDA compute capabilities do not apply",
            _DEFAULT_TODO,
        )
    from_override = decode_override(item)
    if from_override:
        return ArchError(
            f"{item} looks like an HSA_OVERRIDE_GFX_VERSION value, not a gfx target",
            f"the gfx target for version {item} is {from_override}",
            f"use --arch {from_override}",
        )
    if " " in item.strip():
        parts = item.split()
        if all(p.lower() in _KNOWN for p in parts):
            return ArchError(
                f"'{item}' looks like several gfx targets separated by spaces",
                "the arch list is separated by commas or semicolons",
                f"use --arch {','.join(p.lower() for p in parts)}",
            )
    matches = _close_matches(name)
    hint = f" (close matches: {', '.join(matches)})" if matches else ""
    return ArchError(
        f"unknown gfx target '{item}'{hint}",
        "it is not an AMD GPU target name rocmbuild knows",
        f"did you mean {matches[0]}? Otherwise " + _DEFAULT_TODO if matches else _DEFAULT_TODO,
    )


def parse_target(item: str) -> GpuTarget:
    """One target ID, validated against the known names and the features each supports."""
    text = item.strip()
    lowered = text.lower()
    if lowered.startswith(_ISA_PREFIX):  # rocminfo's ISA name pasted as is
        lowered = lowered[len(_ISA_PREFIX):]
    name, *raw_features = lowered.split(":")
    if name not in _KNOWN:
        raise _unknown_name(text, name)
    seen: dict[str, str] = {}
    for feature in raw_features:
        base, sign = feature[:-1], feature[-1:]
        if base not in FEATURES or sign not in ("+", "-"):
            raise ArchError(
                f"bad target-ID feature '{feature}' in '{text}'",
                "features are sramecc+, sramecc-, xnack+ or xnack-",
                f"write e.g. {name}:xnack+ or just {name} (plain names run either way)",
            )
        if base in seen:
            raise ArchError(
                f"'{text}' gives the {base} feature twice",
                "each target-ID feature may appear at most once",
                f"keep one of {seen[base]} / {feature}, or use plain {name}",
            )
        if name not in FEATURES[base]:
            raise ArchError(
                f"{name} does not support the {base} feature ('{text}')",
                f"the compiler rejects {base} on {name} with 'invalid target ID'",
                f"use plain {name}",
            )
        seen[base] = feature
    # The canonical target ID lists features in alphabetical order (sramecc before xnack).
    return GpuTarget(name, tuple(seen[base] for base in sorted(seen)))


def parse_arch_list(text: str) -> Targets:
    """Parse ``gfx942;gfx90a:xnack+, gfx1100``; duplicates dropped keeping the first order."""
    items = [part.strip() for part in re.split(r"[,;]", text)]
    items = [item for item in items if item]
    if not items:
        raise ArchError(
            "the arch list is empty",
            "at least one gfx target is needed to know what to build for",
            _DEFAULT_TODO,
        )
    targets: list[GpuTarget] = []
    for item in items:
        target = parse_target(item)
        if target not in targets:
            targets.append(target)
    return Targets(tuple(targets))


def plain_targets(targets: Targets) -> tuple[Targets, list[str]]:
    """The targets without features (deduplicated, in order) and a warning for every stripped feature."""
    plain: list[GpuTarget] = []
    warnings: list[str] = []
    for target in targets:
        if target.features:
            warnings.append(
                f"{target} -> {target.processor} (the recipe wants plain names; vLLM drops suffixed names)"
            )
        if target.plain() not in plain:
            plain.append(target.plain())
    return Targets(tuple(plain)), warnings


def decode_gfx_target_version(v: int) -> str | None:
    """KFD ``gfx_target_version`` -> gfx name (90402 -> gfx942, 90010 -> gfx90a); 0 (CPU) -> None."""
    if v <= 0:
        return None
    major, minor, step = v // 10000, (v // 100) % 100, v % 100
    if minor > 15 or step > 15:  # would not fit one hex digit: not a real target version
        return None
    return f"gfx{major}{minor:x}{step:x}"


def decode_override(text: str) -> str | None:
    """``HSA_OVERRIDE_GFX_VERSION`` value (``11.0.0``, ``9.4.2``, ``9.0.10``) -> gfx name."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)\.(\d+)\s*", text)
    if not match:
        return None
    major, minor, step = (int(g) for g in match.groups())
    return decode_gfx_target_version(major * 10000 + minor * 100 + step)


@dataclass(frozen=True)
class Detection:
    """GPUs found on this machine: plain gfx names, where they came from, what to warn about."""

    targets: tuple[str, ...]
    source: str
    warnings: tuple[str, ...] = ()

    def as_targets(self) -> Targets:
        """The detected GPUs as typed targets (plain processors: detection reports no features)."""
        return Targets(tuple(GpuTarget(name) for name in self.targets))


def _dedup(names: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for name in names:
        if name not in out:
            out.append(name)
    return tuple(out)


def _node_key(path: Path) -> tuple[int, str]:
    name = path.parent.name
    return (int(name), name) if name.isdigit() else (1 << 30, name)


def _from_sysfs(root: Path) -> tuple[str, ...]:
    try:
        props = sorted(root.glob("*/properties"), key=_node_key)
    except OSError:
        return ()
    found: list[str] = []
    for prop in props:
        try:
            text = prop.read_text(errors="replace")
        except OSError:
            continue
        match = re.search(r"^gfx_target_version\s+(\d+)\s*$", text, re.MULTILINE)
        if match:
            name = decode_gfx_target_version(int(match.group(1)))
            if name:
                found.append(name)
    return _dedup(found)


_LINE_GFX = re.compile(r"^\s*(gfx[0-9a-f]+)\s*$", re.MULTILINE)
_ROCMINFO_GFX = re.compile(r"^\s*Name:\s+(gfx[0-9a-f]+)\s*$", re.MULTILINE)


def _from_tool(run: Callable[[Sequence[str]], CommandResult], argv: Sequence[str],
               pattern: re.Pattern[str]) -> tuple[str, ...]:
    # The exit status is not trusted either way: rocm_agent_enumerator can print its
    # list and then crash; only well-formed gfx lines count.
    result = run(argv)
    if result.missing:
        return ()
    return _dedup(name for name in pattern.findall(result.output) if name != "gfx000")


def detect_local_archs(
    *,
    sysfs_root: Path = SYSFS_NODES,
    run: Callable[[Sequence[str]], CommandResult] = proc.capture,
    environ: Mapping[str, str] = os.environ,
) -> Detection | None:
    """The local GPUs: KFD sysfs (no ROCm userspace needed), then amdgpu-arch,
    rocm_agent_enumerator and rocminfo.  None when nothing is found."""
    targets = _from_sysfs(sysfs_root)
    source = f"sysfs {sysfs_root}"
    if not targets:
        for argv, pattern, label in (
            (["amdgpu-arch"], _LINE_GFX, "amdgpu-arch"),
            (["rocm_agent_enumerator"], _LINE_GFX, "rocm_agent_enumerator"),
            (["rocminfo"], _ROCMINFO_GFX, "rocminfo"),
        ):
            targets = _from_tool(run, argv, pattern)
            if targets:
                source = label
                break
    if not targets:
        return None

    warnings: list[str] = []
    override = environ.get("HSA_OVERRIDE_GFX_VERSION", "").strip()
    if override:
        forced = decode_override(override)
        detected = ", ".join(targets)
        if forced is None:
            warnings.append(
                f"HSA_OVERRIDE_GFX_VERSION={override} is not a valid version (expected e.g. 11.0.0); "
                f"ignoring it and building for the detected {detected}"
            )
        else:
            warnings.append(
                f"HSA_OVERRIDE_GFX_VERSION={override} makes the runtime pretend to be {forced}; "
                f"building for {forced} instead of the detected {detected}"
            )
            targets = (forced,)
    igpus = [name for name in targets if name in _DISPLAY_IGPUS]
    discrete = [name for name in targets if name not in _DISPLAY_IGPUS]
    if igpus and discrete:
        warnings.append(
            f"detected an integrated GPU ({', '.join(igpus)}) next to {', '.join(discrete)}; "
            "pass --arch to leave it out"
        )
    return Detection(targets, source, tuple(warnings))


class ResolvedArch(NamedTuple):
    targets: Targets
    origin: str
    warnings: tuple[str, ...]


def _detected_target(name: str, warnings: list[str]) -> GpuTarget:
    if name not in _KNOWN:
        if not _GFX_RE.match(name):
            raise ArchError(
                f"detected a GPU target rocmbuild cannot read: '{name}'",
                "the detection tool printed something that is not a gfx name",
                "pass --arch explicitly, e.g. --arch gfx942 (MI300X)",
            )
        warnings.append(f"detected {name}, which rocmbuild's target table does not list; using it as is")
    return GpuTarget(name)


def resolve_arch(
    option: str, *, detect: Callable[[], Detection | None] = detect_local_archs
) -> ResolvedArch:
    """``--arch`` value -> targets, where they came from, warnings.  ``auto`` detects."""
    if not is_auto(option):
        return ResolvedArch(parse_arch_list(option), "--arch", ())
    found = detect()
    if found is None or not found.targets:
        raise ArchError(
            "no AMD GPU found to detect the arch from",
            "--arch auto looked at the KFD topology in sysfs, amdgpu-arch, rocm_agent_enumerator "
            "and rocminfo and none reported a GPU (a build host without a GPU is normal)",
            "pass --arch, e.g. --arch gfx942 (MI300X)",
        )
    warnings = list(found.warnings)
    targets = Targets(tuple(_detected_target(name, warnings) for name in found.targets))
    return ResolvedArch(targets, f"auto: {found.source}", tuple(warnings))
