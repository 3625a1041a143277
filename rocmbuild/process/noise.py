"""Noise stripping for matching: what a log line says once decoration is gone.

Used by the one line scanner (``process.watcher.LineScanner``: live, and for
saved logs through ``process.logscan``) on every line it hands a hook.  The raw log always
keeps the original bytes; only the copy that is matched is cleaned.  Removes
ANSI escapes (also the bare ``[0m`` left when a log was copied without the ESC
byte, or with it shown as ``←`` by the Windows console), ``\\r`` progress redraws (keeps the last
redraw), a BOM and NULs, CI
timestamps (ISO, bracketed, ``hh:mm:ss``), GitHub Actions ``##[error]`` markers,
docker BuildKit step prefixes (``#8 245.6 ``), docker compose service prefixes
(``vllm-1  | ``, ``vllm-server  | ``), vLLM's and Ray's process prefixes (``(APIServer pid=1) ``,
``(RayWorkerWrapper pid=12, ip=10.0.0.2) ``), TheRock ``[component phase]`` and ``[component]``
prefixes (a bracketed marker that says error or failure stays), TeamCity's ``[hh:mm:ss][Step n/m]``,
Nix's ``pname> ``, pip's and uv's indentation and box characters (``×│╰─>`` / ``├─▶``), markdown quote markers,
ctest's ``3: `` test-number prefixes, spack's left column of log line numbers,
the indentation of a paste indented as a whole,
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
_QUOTE_CHARS = re.compile(rb"""['"]""")
_SHORTEST_PART = 4  # a keyword's quote-free part shorter than this would make too many lines candidates


def ascii_quotes(text: str) -> str:
    """``text`` with typographic quotes made ASCII, as :func:`clean_line` makes a line's."""
    return text if text.isascii() else text.translate(_TYPOGRAPHIC_QUOTES)


def prefilter_form(keyword: bytes) -> bytes:
    """What a prefilter that runs before :func:`clean_line` searches raw output for to find ``keyword``
    whatever quotes the log has (``‘x’``, ``„x“``, ``'x'``): its longest part without a quote
    (``"Running pass '"`` -> ``"Running pass "``, ``"n't find"`` -> ``"t find"``).  A line holding it
    is a candidate; the signature's own keyword is tested again on the cleaned line."""
    if b"'" not in keyword and b'"' not in keyword:
        return keyword
    longest = max(_QUOTE_CHARS.split(keyword), key=len)
    return longest if len(longest.strip()) >= _SHORTEST_PART else keyword


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# SGR / erase sequences whose ESC byte was lost in copy-paste ("[0m", "[1;31m", "[0K").
# A frame marker an issue tracker rewrote into a link: "[#7](https://github.com/x/y/issues/7)" -> "#7".
_LINKED_FRAME = re.compile(r"\[#(\d+)\]\([^)\s]*\)")
# Markdown left at the end of a pasted line: fences, backticks, bold markers.
_TRAILING_MARKUP = re.compile(r"\s*(?:`+|\*\*)\s*$")
_BARE_SGR = re.compile(r"\[\d{1,3}(?:;\d{1,3})*[mK]|\[K(?!\w)")
# A bracketed marker that says error or failure is kept: it is what makes a line look like an error.
_ERROR_MARKER = r"(?i:e|err|error|fatal|warn|warning|critical|fail|failed|failure|x)"
# Leading decorations, applied repeatedly (a BuildKit prefix may follow a timestamp).
_PREFIXES = re.compile(
    r"""^(?:
        \s*\[?\d{4}-\d\d-\d\d[T\s]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|\s?[+-]\d\d:?\d\d)?\]?(?:\s+|$)  # ISO timestamp
      | \s*\[?\d\d:\d\d:\d\d(?:[.,]\d+)?\]?\s+                                      # 12:34:56 / [12:34:56.789]
      | \s*\#\#\[(?:error|warning|group|endgroup|notice|debug|section|command)\]     # GitHub Actions markers
      | \s*::(?:error|warning|notice|debug|group|endgroup)(?:\s[^:]*)?::              # workflow commands
      | \s*\#\d+\s+\d+(?:\.\d+)?(?:\s|$)                                             # BuildKit "#8 245.6 "
      | [\w.-]+-\d+\s+\|\s                                                           # docker compose "vllm-1  | "
      | (?!(?i:error|err|warning|warn|info|debug|trace|success|critical|fatal|notice)\s)  # (a logger's padded
        [A-Za-z][\w.-]*\s{2,}\|\s             # level column stays) ...a container_name padded: "vllm-server  | "
      | \((?:[A-Za-z][\w.-]*(?:\s+rank=\d+)?\s+)?pid=\d+(?:,\s*ip=[\d.]+)?\)\s+  # vLLM's "(APIServer pid=1) ", Ray's
                                                                  # "(RayWorkerWrapper pid=12, ip=10.0.0.2) "
      | [+-]?\[[\w.+-]+\s(?:configure|build|install|stage|download|test|patch|update)\]\s  # TheRock's prefix,
                                                                  # "[hipBLASLt build] ", also in a pasted diff (+/-)
      | [+-]?\[(?!{level}\])[A-Za-z][\w.+-]*\](?:\[(?!{level}\])[\w.+-]+\])?\s+(?=\S)  # TheRock's
          # newer "[hipBLASLt] ", "[rocprofiler-sdk][external] "; a marker that says error or failure stays
          # ("[ERROR] ", "[FAILED] ", spack's "[x] ")
      | (?:\[\d\d:\d\d:\d\d\])?\s*(?:[WEiF]?:\s+)?\[Step\s\d+/\d+\]\s+            # TeamCity, copied
                                        # "[12:34:56][Step 2/2] " and downloaded "[12:34:56]E:\t [Step 2/2] "
      | [a-z][\w.+-]*>\s                                                              # Nix's "python3.11-torch> "
      | \s*>\s?                                                                      # markdown quote
      | \s*[×│╰╭├┃║╠╚]+(?:[─━]*[>▶])?\s*                                               # pip / uv error boxes
      | \d{1,3}:\s(?=\S)                                                              # ctest "3: "
      | \s*\d{1,6}\s{1,4}(?=[^\s\d|:.,%])(?!(?:Not\ Found|Forbidden|Gone)\b)  # spack column, not apt's "404  Not Found"
      | \d{1,6}\.\d{1,3}\s+(?=\S)                                                      # bare "327.4  " seconds
      | \s*(?:```+\w*|`|\*\*)\s*                                                       # markdown fence, backtick, bold
    )""".replace("{level}", _ERROR_MARKER),
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
    raw = ascii_quotes(raw)  # str.isascii is O(1) on CPython: most lines skip the translation
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
