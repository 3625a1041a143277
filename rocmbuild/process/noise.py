"""Noise stripping for matching: what a log line says once decoration is gone.

Used by the one line scanner (``process.watcher.LineScanner``: live, and for
saved logs through ``process.logscan``) on every line it hands a hook.  The raw log always
keeps the original bytes; only the copy that is matched is cleaned.  Removes
ANSI escapes (also the bare ``[0m`` left when a log was copied without the ESC
byte, or with it shown as ``←`` by the Windows console), ``\\r`` progress redraws (keeps the last
redraw), a BOM and NULs, CI
timestamps (ISO, bracketed, ``hh:mm:ss``), GitHub Actions ``##[error]`` markers,
docker BuildKit step prefixes (``#8 245.6 ``), docker compose service prefixes
(``vllm-1  | ``), TheRock ``[component phase]`` prefixes, pip's and uv's
indentation and box characters (``×│╰─>`` / ``├─▶``), markdown quote markers,
ctest's ``3: `` test-number prefixes, spack's left column of log line numbers,
bare elapsed-seconds prefixes (``327.4 ``, a BuildKit line whose step marker
was not pasted), markdown fences, bold markers and stray backticks at either
end, and issue-tracker links that replaced a crash frame's ``#7`` marker
(``[#7](https://...)``).  Typographic quotes become ASCII ones (GCC and ld print ``‘x’`` in a
UTF-8 locale and ``'x'``/```x'`` in the C locale; a forum or word processor turns ``"x"`` into
``“x”``), so every signature's wording matches whichever quotes the log has.

Lines wrapped at a fixed width cannot be rejoined from one line alone; the
signatures keep their keywords short and their captures tolerant instead, and
the classifier reads multi-line failures (crash reports, CMake error blocks,
tracebacks) as blocks.
"""

from __future__ import annotations

import re

# Quotes a locale or a paste made typographic, mapped to the ASCII ones the tools print in the C locale.
# Backticks stay: ld's C-locale ``undefined reference to `x'`` is matched as it is.
_TYPOGRAPHIC_QUOTES = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
})
_OPENING = {"'": "\u2018", '"': "\u201c"}
_CLOSING = {"'": "\u2019", '"': "\u201d"}
_ASCII_QUOTE = re.compile(r"""(?<=\w)(['"])|(['"])""")  # group 1: after a word character, a closing quote


def typographic_forms(keyword: bytes) -> tuple[bytes, ...]:
    """``keyword`` and the raw form a typographic paste or locale gives it, for a prefilter that runs
    before :func:`clean_line` (``"Running pass '"`` is also found as ``"Running pass ‘"``).

    A quote after a word character is a closing one (``n't`` -> ``n’t``, ``'_ssl'`` -> ``‘_ssl’``).
    """
    if b"'" not in keyword and b'"' not in keyword:
        return (keyword,)
    curly = _ASCII_QUOTE.sub(lambda m: _CLOSING[m[1]] if m[1] else _OPENING[m[2]], keyword.decode("utf-8", "replace"))
    return (keyword, curly.encode())


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# SGR / erase sequences whose ESC byte was lost in copy-paste ("[0m", "[1;31m", "[0K").
# A frame marker an issue tracker rewrote into a link: "[#7](https://github.com/x/y/issues/7)" -> "#7".
_LINKED_FRAME = re.compile(r"\[#(\d+)\]\([^)\s]*\)")
# Markdown left at the end of a pasted line: fences, backticks, bold markers.
_TRAILING_MARKUP = re.compile(r"\s*(?:`+|\*\*)\s*$")
_BARE_SGR = re.compile(r"\[\d{1,3}(?:;\d{1,3})*[mK]|\[K(?!\w)")
# Leading decorations, applied repeatedly (a BuildKit prefix may follow a timestamp).
_PREFIXES = re.compile(
    r"""^(?:
        \s*\[?\d{4}-\d\d-\d\d[T\s]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|\s?[+-]\d\d:?\d\d)?\]?(?:\s+|$)  # ISO timestamp
      | \s*\[?\d\d:\d\d:\d\d(?:[.,]\d+)?\]?\s+                                      # 12:34:56 / [12:34:56.789]
      | \s*\#\#\[(?:error|warning|group|endgroup|notice|debug|section|command)\]     # GitHub Actions markers
      | \s*::(?:error|warning|notice|debug|group|endgroup)(?:\s[^:]*)?::              # workflow commands
      | \s*\#\d+\s+\d+(?:\.\d+)?(?:\s|$)                                             # BuildKit "#8 245.6 "
      | [\w.-]+-\d+\s+\|\s                                                           # docker compose "vllm-1  | "
      | [+-]?\[[\w.+-]+\s(?:configure|build|install|stage|download|test|patch|update)\]\s  # TheRock's prefix,
                                                                  # "[hipBLASLt build] ", also in a pasted diff (+/-)
      | [+-]?\[(?!(?i:error|fatal|warn|warning|critical)\])[A-Za-z][\w.+-]*\](?:\[[\w.+-]+\])?\s+(?=\S)  # TheRock's
          # newer "[hipBLASLt] ", "[rocprofiler-sdk][external] ", Nix-style "[rocm-smi] "; a level that says error stays
      | (?:\[\d\d:\d\d:\d\d\])?\[Step\s\d+/\d+\]\s+                                  # TeamCity "[12:34:56][Step 2/2] "
      | [a-z][\w.+-]*>\s                                                              # Nix's "python3.11-torch> "
      | \s*>\s?                                                                      # markdown quote
      | \s*[×│╰╭├┃║╠╚]+(?:[─━]*[>▶])?\s*                                               # pip / uv error boxes
      | \d{1,3}:\s(?=\S)                                                              # ctest "3: "
      | \s*\d{1,6}\s{1,4}(?=[^\s\d|:.,%])(?!(?:Not\ Found|Forbidden|Gone)\b)  # spack column, not apt's "404  Not Found"
      | \d{1,6}\.\d{1,3}\s+(?=\S)                                                      # bare "327.4  " seconds
      | \s*(?:```+\w*|`|\*\*)\s*                                                       # markdown fence, backtick, bold
    )""",
    re.VERBOSE,
)


def clean_line(raw: str) -> str:
    """The matchable text of one line of build output."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    if "\r" in raw:
        # A progress bar redraws with \r: what a terminal shows is the last part.
        parts = [p for p in raw.split("\r") if p.strip()]
        raw = parts[-1] if parts else ""
    if not raw.isascii():  # O(1) on CPython: most lines skip this
        raw = raw.translate(_TYPOGRAPHIC_QUOTES)
    if "\ufeff" in raw or "\x00" in raw:
        raw = raw.replace("\ufeff", "").replace("\x00", "")
    if "←[" in raw:  # the Windows console shows a lost ESC as ← ("←[91mERROR←[0m")
        raw = raw.replace("←[", "[")
    if "[" in raw and ("m" in raw or "K" in raw):
        raw = _BARE_SGR.sub("", raw)
    if "](" in raw:
        raw = _LINKED_FRAME.sub(r"#\1", raw)
    previous = None
    while previous != raw:
        previous = raw
        # Indentation goes first (the result is stripped anyway): a paste indented as a markdown list
        # item still shows each prefix at the start of the line.
        raw = _PREFIXES.sub("", raw.lstrip(), count=1)
    if raw.endswith(("`", "*")):
        raw = _TRAILING_MARKUP.sub("", raw)
    return raw.strip()
