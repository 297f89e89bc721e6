#!/usr/bin/env python3
"""bench/symbolize driver: feeds the same address list twice to one long-running
symbolizer process and times each pass (cold: first pass; warm: second pass, same
process), then compares function names with llvm-symbolizer's.

usage: drive.py ADDR_FILE NAME -- CMD ARGS...  (CMD must print each address (0x..)
before its frames, as `-a` does for all three tools). Prints one JSON line."""
import json
import re
import subprocess
import sys
import threading
import time

addr_file, name = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
addrs = open(addr_file).read().split()
n = len(addrs)
data = ("\n".join(addrs) + "\n").encode()
ADDR = re.compile(r"^0x[0-9a-fA-F]+$")

p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 20)


def writer():
    p.stdin.write(data)
    p.stdin.write(data)
    p.stdin.close()


t0 = time.monotonic()
threading.Thread(target=writer, daemon=True).start()
# Timing reads big chunks and counts address lines at C speed, so the driver never
# is the bottleneck; the output is parsed after the clock stops.
chunks, seen, t1, tail = [], 0, None, b"\n"
while True:
    c = p.stdout.read1(1 << 20)
    if not c:
        break
    chunks.append(c)
    seen += (tail + c).count(b"\n0x") if t1 is None else 0
    tail = c[-2:]
    if t1 is None and seen > n:
        t1 = time.monotonic()
t2 = time.monotonic()
p.wait()
if t1 is None:
    t1 = t2
records, cur, seen = [], None, 0
for line in b"".join(chunks).decode(errors="replace").split("\n"):
    if ADDR.match(line):
        seen += 1
        cur = [] if seen <= n else None
        if cur is not None:
            records.append(cur)
        continue
    if cur is not None and line != "":
        cur.append(line)
# frames: (name, file:line) pairs; keep names
names = [[r[i] for i in range(0, len(r), 2)] for r in records]
json.dump({"name": name, "n": n, "cold_s": t1 - t0, "warm_s": t2 - t1, "names": names},
          sys.stdout)
