"""Writes one 10 MB line containing a keyword near its end, then a normal line."""

import os
import sys

size = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
block = b"x" * 65536
left = size
while left > 0:
    left -= os.write(1, block[: min(left, len(block))])
os.write(1, b" fatal error here\nafter the long line\n")
