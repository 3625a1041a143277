"""arch.py: target-ID parsing, product names, sysfs decoding, local detection."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from rocmbuild.errors import ArchError, ExitCode
from rocmbuild.host import arch
from rocmbuild.host.arch import Detection, GpuTarget, Targets
from rocmbuild.process.command import CommandResult

# ---------------------------------------------------------------- parsing


def test_parse_both_separators_whitespace_and_dedup() -> None:
    targets = arch.parse_arch_list(" gfx942; gfx90a ,gfx1100;gfx942,  ")
    assert [str(t) for t in targets] == ["gfx942", "gfx90a", "gfx1100"]


def test_parse_features_are_kept_canonical_and_case_folded() -> None:
    targets = arch.parse_arch_list("gfx90a:xnack+;GFX908:xnack-:sramecc+")
    assert targets == Targets((GpuTarget("gfx90a", ("xnack+",)), GpuTarget("gfx908", ("sramecc+", "xnack-"))))
    assert targets.names == ("gfx90a:xnack+", "gfx908:sramecc+:xnack-")
    assert targets.processors == ("gfx90a", "gfx908")
    assert targets.items[0].plain() == GpuTarget("gfx90a")


def test_suffixed_and_plain_are_distinct_until_plain_targets() -> None:
    targets = arch.parse_arch_list("gfx942,gfx942:xnack-,gfx90a:xnack+,gfx90a")
    assert len(targets) == 4
    plain, warnings = arch.plain_targets(targets)
    assert plain.names == ("gfx942", "gfx90a")
    assert warnings == [
        "gfx942:xnack- -> gfx942 (the recipe wants plain names; vLLM drops suffixed names)",
        "gfx90a:xnack+ -> gfx90a (the recipe wants plain names; vLLM drops suffixed names)",
    ]


def test_plain_targets_without_features_warns_nothing() -> None:
    targets = arch.parse_arch_list("gfx942;gfx950")
    assert arch.plain_targets(targets) == (targets, [])


def test_gpu_target_parses_features_into_a_typed_value() -> None:
    target = GpuTarget.parse("amdgcn-amd-amdhsa--gfx942:xnack-:sramecc+")   # rocminfo's ISA name, any order
    assert target == GpuTarget("gfx942", ("sramecc+", "xnack-"))
    assert (target.processor, str(target), target.plain()) == ("gfx942", "gfx942:sramecc+:xnack-", GpuTarget("gfx942"))


@pytest.mark.parametrize(("text", "fragment"), [
    ("gfx942:xnack", "bad target-ID feature 'xnack' in 'gfx942:xnack'"),
    ("gfx942:xnack+:xnack-", "gives the xnack feature twice"),
    ("gfx1100:sramecc+", "gfx1100 does not support the sramecc feature"),
    ("gfx9999", "unknown gfx target 'gfx9999'"),
])
def test_invalid_targets_say_what_is_wrong(text: str, fragment: str) -> None:
    with pytest.raises(ArchError, match=re.escape(fragment)) as info:
        GpuTarget.parse(text)
    assert info.value.exit_code == ExitCode.USAGE


def test_targets_give_every_form_consumers_need() -> None:
    targets = Targets.parse("gfx942:xnack-, gfx942; gfx90a:sramecc+:xnack+")
    assert len(targets) == 3 and bool(targets) and not Targets()
    assert targets.names == ("gfx942:xnack-", "gfx942", "gfx90a:sramecc+:xnack+")
    assert targets.processors == ("gfx942", "gfx90a")
    assert targets.as_env(";") == "gfx942:xnack-;gfx942;gfx90a:sramecc+:xnack+"
    assert targets.as_env(",") == "gfx942:xnack-,gfx942,gfx90a:sramecc+:xnack+"
    assert targets.only(["gfx90a"]).names == ("gfx90a:sramecc+:xnack+",)
    assert Detection(("gfx942", "gfx90a"), "sysfs").as_targets() == Targets.parse("gfx942,gfx90a")


def test_processor_of_reads_tool_output_without_validating() -> None:
    assert arch.processor_of(" gfx942:sramecc+:xnack- ") == "gfx942"
    assert arch.processor_of("gfx1250") == "gfx1250"           # newer than the table: tools may know it


def test_processors_in_finds_gfx_names_in_tool_output() -> None:
    assert arch.processors_in("hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-") == ["gfx942"]
    assert arch.processors_in("-- Disabling CK for gfx1030 (and gfx9-4-generic): not supported") == [
        "gfx1030", "gfx9-4-generic"]
    assert arch.processors_in("libgfx942x.so, gfx90ab_c") == []      # not a name on its own


def test_typo_names_close_match() -> None:
    with pytest.raises(ArchError) as info:
        arch.parse_arch_list("gfx90a,gfx9422")
    err = info.value
    assert err.exit_code == ExitCode.USAGE == 2
    assert "gfx9422" in str(err)
    assert "gfx942" in str(err).split("close matches:")[1]


def test_typo_without_gfx_prefix() -> None:
    with pytest.raises(ArchError, match="close matches: gfx942"):
        arch.parse_arch_list("942")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("MI300X", "MI300X is a product; its gfx target is gfx942"),
        ("mi300x", "MI300X is a product; its gfx target is gfx942"),
        ("RX 7900 XTX", "RX 7900 XTX is a product; its gfx target is gfx1100"),
        ("rx7900xtx", "RX 7900 XTX is a product; its gfx target is gfx1100"),
        ("AMD Instinct MI355X", "MI355X is a product; its gfx target is gfx950"),
        ("MI250X", "MI250X is a product; its gfx target is gfx90a"),
        ("Strix Halo", "Strix Halo is a product; its gfx target is gfx1151"),
        ("RX 9070 XT", "RX 9070 XT is a product; its gfx target is gfx1201"),
    ],
)
def test_product_names_point_at_their_target(text: str, message: str) -> None:
    with pytest.raises(ArchError) as info:
        arch.parse_arch_list(f"gfx942,{text}")
    assert str(info.value) == message
    assert info.value.todo.endswith(message.rsplit(" ", 1)[1])


def test_cuda_arch_is_named_as_such() -> None:
    with pytest.raises(ArchError, match=r"sm_90 is an NVIDIA CUDA arch, not an AMD gfx target"):
        arch.parse_arch_list("sm_90")


@pytest.mark.parametrize("text", ["", "  ", ",", " ; , "])
def test_empty_list_is_an_error(text: str) -> None:
    with pytest.raises(ArchError, match="empty"):
        arch.parse_arch_list(text)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("gfx90a:xnack+:xnack-", "xnack feature twice"),
        ("gfx90a:xnack", "bad target-ID feature 'xnack'"),
        ("gfx90a:foo+", r"bad target-ID feature 'foo\+'"),
        ("gfx1100:xnack+", "gfx1100 does not support the xnack feature"),
        ("gfx1030:sramecc-", "gfx1030 does not support the sramecc feature"),
        ("gfx942 gfx90a", "separated by spaces"),
        ("11.0.0", "HSA_OVERRIDE_GFX_VERSION value"),
    ],
)
def test_bad_entries(text: str, fragment: str) -> None:
    with pytest.raises(ArchError, match=fragment):
        arch.parse_arch_list(text)


def test_is_auto() -> None:
    assert arch.is_auto("auto") and arch.is_auto(" AUTO ")
    assert not arch.is_auto("gfx942") and not arch.is_auto("")


def test_every_product_maps_to_a_known_target() -> None:
    assert set(arch.PRODUCTS.values()) <= set(arch.KNOWN_TARGETS)


# ---------------------------------------------------------------- decoding


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (90402, "gfx942"),
        (90010, "gfx90a"),
        (90500, "gfx950"),
        (110000, "gfx1100"),
        (120001, "gfx1201"),
        (90008, "gfx908"),
        (100300, "gfx1030"),
        (110501, "gfx1151"),
        (90012, "gfx90c"),
        (0, None),
    ],
)
def test_decode_gfx_target_version(value: int, name: str | None) -> None:
    assert arch.decode_gfx_target_version(value) == name


@pytest.mark.parametrize(
    ("text", "name"),
    [("11.0.0", "gfx1100"), ("9.4.2", "gfx942"), ("10.3.0", "gfx1030"), ("9.0.10", "gfx90a"),
     ("eleven", None)],
)
def test_decode_override(text: str, name: str | None) -> None:
    assert arch.decode_override(text) == name


# ---------------------------------------------------------------- detection


def write_node(root: Path, node: str, version: int) -> None:
    d = root / node
    d.mkdir(parents=True)
    (d / "properties").write_text(
        "cpu_cores_count 0\nsimd_count 304\n"
        f"gfx_target_version {version}\nvendor_id 4098\ndevice_id 29856\n"
    )


class FakeRun:
    """Stands in for proc.capture; records what was asked."""

    def __init__(self, outputs: dict[str, CommandResult]) -> None:
        self.outputs = outputs
        self.calls: list[str] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(argv[0])
        return self.outputs.get(argv[0], CommandResult(None, f"{argv[0]}: not found", missing=True))


NOTHING = FakeRun({})


def test_sysfs_detection(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes"
    write_node(nodes, "0", 0)        # the CPU
    write_node(nodes, "1", 90402)
    write_node(nodes, "2", 90402)
    write_node(nodes, "10", 90010)   # numeric node order, not string order
    write_node(nodes, "3", 90402)
    run = FakeRun({"amdgpu-arch": CommandResult(0, "gfx1100\n")})
    found = arch.detect_local_archs(sysfs_root=nodes, run=run, environ={})
    assert found == Detection(("gfx942", "gfx90a"), f"sysfs {nodes}", ())
    assert run.calls == []           # sysfs answered, no tool was run


def test_sysfs_only_cpu_falls_back_to_amdgpu_arch(tmp_path: Path) -> None:
    write_node(tmp_path, "0", 0)
    run = FakeRun({"amdgpu-arch": CommandResult(0, "gfx1100\ngfx1100\ngfx1030\n")})
    found = arch.detect_local_archs(sysfs_root=tmp_path, run=run, environ={})
    assert found == Detection(("gfx1100", "gfx1030"), "amdgpu-arch", ())


def test_rocm_agent_enumerator_drops_gfx000(tmp_path: Path) -> None:
    run = FakeRun({
        "amdgpu-arch": CommandResult(1, "Failed to get device count\n"),
        "rocm_agent_enumerator": CommandResult(0, "gfx000\ngfx942\ngfx942\n"),
    })
    found = arch.detect_local_archs(sysfs_root=tmp_path / "absent", run=run, environ={})
    assert found == Detection(("gfx942",), "rocm_agent_enumerator", ())
    assert run.calls == ["amdgpu-arch", "rocm_agent_enumerator"]


ROCMINFO = """\
*******
Agent 1
*******
  Name:                    AMD EPYC 9654 96-Core Processor
  Marketing Name:          AMD EPYC 9654 96-Core Processor
  Device Type:             CPU
*******
Agent 2
*******
  Name:                    gfx942
  Marketing Name:          AMD Instinct MI300X
  Device Type:             GPU
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-
*******
Agent 3
*******
  Name:                    gfx90a
"""


def test_rocminfo_fallback(tmp_path: Path) -> None:
    run = FakeRun({
        "rocm_agent_enumerator": CommandResult(1, "Traceback (most recent call last):\nFileNotFoundError\n"),
        "rocminfo": CommandResult(0, ROCMINFO),
    })
    found = arch.detect_local_archs(sysfs_root=tmp_path, run=run, environ={})
    assert found == Detection(("gfx942", "gfx90a"), "rocminfo", ())


def test_nothing_found_is_none(tmp_path: Path) -> None:
    assert arch.detect_local_archs(sysfs_root=tmp_path, run=NOTHING, environ={}) is None


def test_hsa_override_warns_and_wins(tmp_path: Path) -> None:
    write_node(tmp_path, "1", 110003)   # gfx1103, a Radeon 780M
    found = arch.detect_local_archs(
        sysfs_root=tmp_path, run=NOTHING, environ={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}
    )
    assert found is not None
    assert found.targets == ("gfx1100",)
    assert found.warnings == (
        "HSA_OVERRIDE_GFX_VERSION=11.0.0 makes the runtime pretend to be gfx1100; "
        "building for gfx1100 instead of the detected gfx1103",
    )


def test_invalid_hsa_override_is_ignored_with_a_warning(tmp_path: Path) -> None:
    write_node(tmp_path, "1", 90402)
    found = arch.detect_local_archs(sysfs_root=tmp_path, run=NOTHING,
                                    environ={"HSA_OVERRIDE_GFX_VERSION": "gfx1100"})
    assert found is not None and found.targets == ("gfx942",)
    assert "not a valid version" in found.warnings[0]


def test_integrated_gpu_next_to_discrete_is_warned_about(tmp_path: Path) -> None:
    write_node(tmp_path, "1", 100306)   # gfx1036, Raphael iGPU
    write_node(tmp_path, "2", 110000)
    found = arch.detect_local_archs(sysfs_root=tmp_path, run=NOTHING, environ={})
    assert found is not None and found.targets == ("gfx1036", "gfx1100")
    assert "integrated GPU (gfx1036) next to gfx1100" in found.warnings[0]


# ---------------------------------------------------------------- resolve_arch


def test_resolve_explicit() -> None:
    def boom() -> Detection | None:
        raise AssertionError("explicit --arch must not detect")

    resolved = arch.resolve_arch("gfx942;gfx90a:xnack+", detect=boom)
    targets, origin, warnings = resolved
    assert targets == Targets((GpuTarget("gfx942"), GpuTarget("gfx90a", ("xnack+",))))
    assert origin == "--arch" and warnings == ()


def test_resolve_auto_uses_detection(tmp_path: Path) -> None:
    write_node(tmp_path, "1", 90402)
    resolved = arch.resolve_arch(
        "auto", detect=lambda: arch.detect_local_archs(sysfs_root=tmp_path, run=NOTHING, environ={})
    )
    assert resolved.targets == Targets((GpuTarget("gfx942"),))
    assert resolved.origin == f"auto: sysfs {tmp_path}"


def test_resolve_auto_accepts_a_newer_target_with_a_warning() -> None:
    resolved = arch.resolve_arch("auto", detect=lambda: Detection(("gfx1250",), "amdgpu-arch", ()))
    assert resolved.targets == Targets((GpuTarget("gfx1250"),))
    assert "gfx1250" in resolved.warnings[0]


def test_resolve_auto_nothing_found() -> None:
    with pytest.raises(ArchError) as info:
        arch.resolve_arch("auto", detect=lambda: None)
    assert str(info.value) == "no AMD GPU found to detect the arch from"
    assert info.value.todo == "pass --arch, e.g. --arch gfx942 (MI300X)"
    assert info.value.exit_code == 2
