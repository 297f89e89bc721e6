#!/usr/bin/env python3
"""bench/symbolize driver: feeds the same address list twice to one long-running
symbolizer process and times each pass (cold: first pass; warm: second pass, same
process), then compares function names with llvm-symbolizer's.

usage: drive.py ADDR_FILE NAME -- CMD ARGS...  (CMD must print each address (0x..)
before its frames, as `-a` does for all three tools). Prints one JSON line."""
import json
import os
import re
import subprocess
import sys
import tempfile

addr_file, name = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
addrs = open(addr_file).read().split()
n = len(addrs)
ADDR = re.compile(r"^0x[0-9a-fA-F]+$")

# The clock is bench/symbolize_gen/timer.c (built by bench/symbolize; path in
# SYMBOLIZE_TIMER): it feeds the list twice through a pipe, reads the answers through
# a pipe in 1 MiB reads, and saves them; they are parsed here after the clock stopped.
timer = os.environ["SYMBOLIZE_TIMER"]
with tempfile.NamedTemporaryFile(prefix="hearth-drive-") as out:
    r = subprocess.run([timer, addr_file, out.name] + cmd, stdout=subprocess.PIPE, check=True)
    cold_s, warm_s, lines = r.stdout.split()
    cold_s, warm_s = float(cold_s), float(warm_s)
    if int(lines) != n:
        sys.exit(f"drive.py: the timer counted {lines} addresses, the list has {n}")
    output = open(out.name, "rb").read()
records, cur, seen = [], None, 0
for line in output.decode(errors="replace").split("\n"):
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
json.dump({"name": name, "n": n, "cold_s": cold_s, "warm_s": warm_s, "names": names},
          sys.stdout)
