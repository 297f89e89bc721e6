#!/usr/bin/env python3
"""Writes to stdout a small pprof (profile.proto, uncompressed) shaped like what
hearth's agent pushes since issue 30: every stack ends, root side, with a task
location (mapping "[task]", address pid << 32 | tid, one line whose function is
the thread's name: "app-main" and "other-w"), and some frames are unnamed ("libfoo.so.1+0x1f0", as src/collect names them). Two processes:
pid 100 (tid 101) and pid 200 (tid 201), 17 samples in all:

  pid 100: main(app);work 5   main(app);libfoo+0x1f0 3
  pid 200: main(other);libfoo+0x2a0 7   main(other);work 2

"main" is in /usr/bin/app for pid 100 and /usr/bin/other for pid 200: merged
into one node it has no module of its own. Hand-encoded protobuf, no library.
"""
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):  # length-delimited
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def num(num_, v):
    return varint(num_ << 3) + varint(v)


def packed(num_, vals):
    return field(num_, b"".join(varint(v) for v in vals))


strings = ["", "samples", "count", "cpu", "nanoseconds", "main", "work",
           "libfoo.so.1+0x1f0", "libfoo.so.1+0x2a0", "[task]", "/usr/lib/libfoo.so.1",
           "/usr/bin/app", "/usr/bin/other", "process", "svc", "app-main", "other-w"]
S = {s: i for i, s in enumerate(strings)}
out = bytearray()
for t, u in (("samples", "count"), ("cpu", "nanoseconds")):
    out += field(1, num(1, S[t]) + num(2, S[u]))
PERIOD = 10000000
# mappings: 1 [task], 2 libfoo, 3 app, 4 other
maps = [(1, 0, 0, "[task]"), (2, 0x1000, 0x9000, "/usr/lib/libfoo.so.1"),
        (3, 0x400000, 0x500000, "/usr/bin/app"), (4, 0x600000, 0x700000, "/usr/bin/other")]
for mid, start, limit, f in maps:
    out += field(3, num(1, mid) + num(2, start) + num(3, limit) + num(4, 0) + num(5, S[f]))
# functions: 1 main, 2 work, 3 libfoo+0x1f0, 4 libfoo+0x2a0, 5 and 6 the threads' names
funcs = [(1, "main"), (2, "work"), (3, "libfoo.so.1+0x1f0"), (4, "libfoo.so.1+0x2a0"),
         (5, "app-main"), (6, "other-w")]
for fid, name in funcs:
    out += field(5, num(1, fid) + num(2, S[name]) + num(3, S[name]))
# locations: id, mapping, address, function (0: none)
locs = [(1, 3, 0x401000, 1), (2, 3, 0x402000, 2), (3, 2, 0x11F0, 3), (4, 2, 0x12A0, 4),
        (5, 4, 0x601000, 1), (6, 4, 0x602000, 2),
        (10, 1, 100 << 32 | 101, 5), (11, 1, 200 << 32 | 201, 6)]
for lid, mid, addr, fid in locs:
    body = num(1, lid) + num(2, mid) + num(3, addr)
    if fid:
        body += field(4, num(1, fid))
    out += field(4, body)
samples = [([2, 1, 10], 5), ([3, 1, 10], 3), ([4, 5, 11], 7), ([6, 5, 11], 2)]
for stack, n in samples:
    out += field(2, packed(1, stack) + packed(2, [n, n * PERIOD]) +
                 field(3, num(1, S["process"]) + num(2, S["svc"])))
for s in strings:
    out += field(6, s.encode())
out += field(11, num(1, S["cpu"]) + num(2, S["nanoseconds"])) + num(12, PERIOD)
sys.stdout.buffer.write(bytes(out))
