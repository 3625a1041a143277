"""Noise stripping: what a decorated log line says."""

from __future__ import annotations

import pytest

from rocmbuild.process.noise import ascii_quotes, clean_line, prefilter_form

LD = "/usr/bin/ld: cannot find -lhipblas"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (LD, LD),
        (f"2025-03-01T12:01:08.1400866Z {LD}", LD),  # GitHub Actions
        (f"2025-03-01 12:01:08,140 {LD}", LD),
        (f"[2024-01-02T03:04:05.123Z] {LD}", LD),  # Jenkins timestamper
        (f"08:17:19 {LD}", LD),
        (f"[08:17:19.123] {LD}", LD),
        (f"#8 245.6 {LD}", LD),  # BuildKit
        ("#9 10.47", ""),
        (f"2025-03-01T12:01:08Z #8 245.6 {LD}", LD),  # timestamp then BuildKit
        (f"[hipBLASLt build] {LD}", LD),  # TheRock
        (f"[rocBLAS configure] {LD}", LD),
        (f"+[hip-clr configure] {LD}", LD),  # TheRock's lines pasted in a diff block (ROCm/TheRock#462)
        (f"-[hip-clr configure] {LD}", LD),
        (f"vllm-1  | {LD}", LD),  # docker compose
        (f"##[error]{LD}", LD),
        (f"      {LD}", LD),  # pip indentation
        (f"  │ {LD}", LD),
        ("  ╰─> [38 lines of output]", "[38 lines of output]"),
        ("  × Building wheel for vllm (pyproject.toml) did not run successfully.",
         "Building wheel for vllm (pyproject.toml) did not run successfully."),
        ("  ├─▶ The build backend returned an error", "The build backend returned an error"),  # uv
        (f"> {LD}", LD),  # markdown quote
        (f"> > {LD}", LD),
        (f"\x1b[1m\x1b[31m{LD}\x1b[0m\x1b[K", LD),  # ANSI
        (f"[0m[1;31m{LD}[0m", LD),  # ANSI whose ESC bytes were lost
        ("[mypy] checking", "checking"),  # a component's prefix (TheRock's "[hipBLASLt] ")
        (f"[rocprofiler-sdk][external] {LD}", LD),
        ("[ERROR] Exited with error code 1", "[ERROR] Exited with error code 1"),  # a level that says error stays
        (f"[20:54:59][Step 2/2] {LD}", LD),  # TeamCity
        (f"[14:36:30] :\t [Step 2/3] {LD}", LD),  # TeamCity's downloaded build log
        (f"[14:36:30]E:\t [Step 2/2] {LD}", LD),
        ("[x] 4gygj2i py-cachetools@7.1.1 failed: /tmp/x.log (4s)",
         "[x] 4gygj2i py-cachetools@7.1.1 failed: /tmp/x.log (4s)"),  # spack's failure marker stays
        (f"[FAILED] {LD}", f"[FAILED] {LD}"),
        ("python3.11-torch> -- Configuring incomplete, errors occurred!",
         "-- Configuring incomplete, errors occurred!"),  # Nix's builder prefix
        ("[end of output]", "[end of output]"),
        # the whole paste indented as a markdown list item: each prefix is still found
        ("    327.4  #7 0x00005ddc05095c19 clang::Parser::Parse", "#7 0x00005ddc05095c19 clang::Parser::Parse"),
        ("    132.3   \u2570\u2500\u25b6 operation timed out", "operation timed out"),
        (f"    [hipBLASLt] {LD}", LD),
        ("[rocprim]  #0 0x00007ff63f1b49b8 (C:\\rocm\\bin\\clang++.exe+0x1b249b8)",
         "#0 0x00007ff63f1b49b8 (C:\\rocm\\bin\\clang++.exe+0x1b249b8)"),  # TheRock's component prefix on a frame
        ("[1] #1 0x10 is not a frame", "[1] #1 0x10 is not a frame"),  # a number in brackets is not a component
        ("[12/400] Building HIP object x.o", "[12/400] Building HIP object x.o"),  # ninja status kept
        # vLLM's process prefix (ROCm/aiter#1415, ROCm/aiter#4818) behind a padded compose service name;
        # Ray's worker prefix names its IP too
        ("vllm-server  | (APIServer pid=1) KeyError: 'gfx1151'", "KeyError: 'gfx1151'"),
        (f"(Worker_TP5_EP5 pid=1070) {LD}", LD),
        (f"(RayWorkerWrapper pid=12, ip=10.0.0.2) {LD}", LD),
        ("Name | Value", "Name | Value"),  # one space before a pipe: a table row, not a compose prefix
        ("WARNING  | Unsupported GPU target gfx1036", "WARNING  | Unsupported GPU target gfx1036"),  # a level column
        ("(see pid=3 above) x", "(see pid=3 above) x"),
        ("  50%|#####     |\r 100%|##########|\r", "100%|##########|"),  # \r redraws: the last one
        (f"{LD}\r", LD),  # CRLF
        (f"\ufeff{LD}", LD),
        (f"{LD}\x00", LD),
        ("", ""),
        (f"3: {LD}", LD),  # ctest test-number prefix
        (f" 8441   {LD}", LD),  # spack's column of log line numbers
        ("  404  Not Found [IP: 13.82.220.49 80]", "404  Not Found [IP: 13.82.220.49 80]"),  # apt status
        ("327.4  #7 0x00005ddc05095c19 clang::Parser::ParseX() (/opt/rocm/lib/llvm/bin/clang-20+0x4a8bc19)",
         "#7 0x00005ddc05095c19 clang::Parser::ParseX() (/opt/rocm/lib/llvm/bin/clang-20+0x4a8bc19)"),  # bare seconds
        ("[#7](https://github.com/x/y/issues/7) 0x0000000001859942 (/opt/rocm/llvm/bin/llc+0x1859942)",
         "#7 0x0000000001859942 (/opt/rocm/llvm/bin/llc+0x1859942)"),  # tracker-linked frame marker
        (f"`{LD}`", LD),  # inline code
        (f"```{LD}", LD),
        (f"**{LD}**", LD),
        ("```", ""),
        ("  193 |   wmma::mma_sync(a, b, c, d);", "193 |   wmma::mma_sync(a, b, c, d);"),  # source snippets keep
        ("0.      Program arguments: /opt/rocm/llvm/bin/llc", "0.      Program arguments: /opt/rocm/llvm/bin/llc"),
        ("1 error generated when compiling for gfx942.", "error generated when compiling for gfx942."),
        # GCC and ld in a UTF-8 locale; a paste through a forum or word processor
        ("error: \u2018mode\u2019 was not declared in this scope", "error: 'mode' was not declared in this scope"),
        ('Could not find a package configuration file provided by \u201chip\u201d',
         'Could not find a package configuration file provided by "hip"'),
        ("undefined reference to `hipMalloc'", "undefined reference to `hipMalloc'"),  # ld's C locale: kept
    ],
)
def test_clean_line(raw: str, clean: str) -> None:
    assert clean_line(raw) == clean


def test_clean_line_is_idempotent() -> None:
    raw = "2025-03-01T12:01:08Z #8 245.6   │ \x1b[31mImportError: libamdhip64.so.6: cannot open\x1b[0m"
    once = clean_line(raw)
    assert once == "ImportError: libamdhip64.so.6: cannot open"
    assert clean_line(once) == once


def test_content_that_looks_like_a_prefix_is_kept() -> None:
    # A message that merely contains a time or '>' later in the line is untouched.
    line = "error: build took 12:34:56 > limit"
    assert clean_line(line) == line
    assert clean_line("x -> y") == "x -> y"



@pytest.mark.parametrize(
    ("keyword", "form"),
    [
        (b"cannot find -l", b"cannot find -l"),
        (b"Running pass '", b"Running pass "),
        (b"n't find", b"t find"),
        (b"'_ssl'", b"_ssl"),
        (b'_DIR" to a directory', b" to a directory"),
        (b"the 'impossible' happened", b"impossible"),
        (b"'ab'", b"'ab'"),  # no part long enough: kept (a line must then show ASCII quotes)
    ],
)
def test_the_prefilter_searches_a_keywords_longest_part_without_quotes(keyword: bytes, form: bytes) -> None:
    assert prefilter_form(keyword) == form


@pytest.mark.parametrize("quoted", ["\u2018x\u2019", "\u201cx\u201d", "\u201ax\u2018", "\u201ex\u201c",
                                    "\u2032x\u2032"])
def test_every_quote_the_cleaner_maps_can_surround_a_prefilter_form(quoted: str) -> None:
    # English, German (low-9 opening) and prime quotes all clean to ASCII, and the prefilter's form of a
    # quoted keyword holds no quote at all, so it is in the raw line whichever of them the paste has
    line = f"ghc.exe: panic! (the {quoted.replace('x', 'impossible')} happened)"
    assert ascii_quotes(line).count("impossible") == 1 and ascii_quotes(line).isascii()
    assert prefilter_form(b"the 'impossible' happened").decode() in line
