"""A compile-like job that allocates for real: names itself (comm) like a compiler, grows, holds, exits.

Usage: alloc.py MB [--name cc1plus] [--step-mb 10] [--step-s 0.05] [--hold-s 1] [--tag T]
Pages are written (not just reserved), so RSS and the machine's available memory move for real.
"""

import argparse
import ctypes
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("mb", type=int)
parser.add_argument("--name", default="cc1plus")
parser.add_argument("--step-mb", type=int, default=10)
parser.add_argument("--step-s", type=float, default=0.05)
parser.add_argument("--hold-s", type=float, default=1.0)
parser.add_argument("--tag", default="")
args = parser.parse_args()

PR_SET_NAME = 15
ctypes.CDLL(None).prctl(PR_SET_NAME, args.name.encode()[:15], 0, 0, 0)
chunks = []
while len(chunks) * args.step_mb < args.mb:
    chunks.append(bytearray(b"\x01") * (args.step_mb * 1024 * 1024))
    time.sleep(args.step_s)
time.sleep(args.hold_s)
print(f"job {args.tag} done: {len(chunks) * args.step_mb} MB", flush=True)
sys.exit(0)
