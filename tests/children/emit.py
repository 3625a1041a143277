"""Writes a known byte sequence to stdout in pieces (and the same bytes to a file, when given).

usage: emit.py KIND [COPY_FILE]
"""

import os
import sys
import time

KINDS = {
    # a line split across several writes, with pauses so the reads see the pieces
    "partial": [b"par", b"tial li", b"ne one\nline ", b"two\n"],
    # \r progress redraws inside one line, then a real line
    "progress": [b"Downloading  10%\r", b"Downloading  50%\r", b"Downloading 100%\n", b"done\n"],
    # invalid UTF-8 in the middle of a line with a keyword
    "badutf8": [b"ok line\n", b"bad \xff\xfe bytes error here\n", b"caf\xc3\xa9\n"],
    # ninja, cmake and pip progress
    "ninja": [b"[1/4] Building CXX object a.o\n", b"[2/4] Building CXX object b.o\n",
              b"[3/4 1s] Linking CXX shared library libx.so\n"],
    "cmake": [b"[ 10%] Building CXX object a.o\n", b"\x1b[32m[ 45%] Building CXX object b.o\x1b[0m\n"],
    "pip": [b"Collecting numpy\n", b"Building wheel for vllm (setup.py) ... \n"],
    # colours and an error among ordinary lines
    "mixed": [b"\x1b[1m\x1b[31merror:\x1b[0m cannot find -lhipblas\n", b"plain\n", b"warning: unused\n"],
    # no newline at the end
    "unterminated": [b"line\n", b"no newline at the end"],
}

kind = sys.argv[1]
copy = sys.argv[2] if len(sys.argv) > 2 else os.devnull
with open(copy, "wb") as f:
    for piece in KINDS[kind]:
        os.write(1, piece)
        f.write(piece)
        time.sleep(0.05)
