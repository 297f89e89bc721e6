#!/usr/bin/env python3
"""Writes a gzipped pprof of an off-CPU or wall-clock profile shaped the way
hearth's producer writes one (docs/offcpu.md, the contract of issue 28): one
sample type KIND/nanoseconds, period type KIND/nanoseconds, every stack ending
(leaf side) with the pseudo-frame `[off-cpu: REASON]` (`[on-cpu]` for running
time in the wall type) and root side with the `[task]` location
(pid << 32 | tid), each sample labelled `reason`.

    offcpu_view_pprof.py KIND OUT [TIME_S] [SCALE]

KIND: off_cpu or wall. The samples (value in ms x SCALE):
    main;serve;read_request;[off-cpu: io]         120
    main;serve;lock_table;[off-cpu: lock]          80
    main;idle_loop;epoll_wait;[off-cpu: sleep]    600
    main;serve;compute;[off-cpu: runqueue]         40
  wall only:
    main;serve;compute;[on-cpu]                   160
The figures a test expects are printed as `reason MS` lines on stdout.
"""
import gzip
import sys

KIND = sys.argv[1]
OUT = sys.argv[2]
TIME_S = int(sys.argv[3]) if len(sys.argv) > 3 else 0
SCALE = int(sys.argv[4]) if len(sys.argv) > 4 else 1
MS = 1000000

STACKS = [
    (['main', 'serve', 'read_request'], 'io', 120),
    (['main', 'serve', 'lock_table'], 'lock', 80),
    (['main', 'idle_loop', 'epoll_wait'], 'sleep', 600),
    (['main', 'serve', 'compute'], 'runqueue', 40),
]
if KIND == 'wall':
    STACKS.append((['main', 'serve', 'compute'], 'running', 160))


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def f_int(f, n):
    return varint(f << 3) + varint(n)


def f_bytes(f, b):
    return varint(f << 3 | 2) + varint(len(b)) + b


def packed(f, ns):
    return f_bytes(f, b''.join(varint(n) for n in ns))


strs = ['']


def s(x):
    if x not in strs:
        strs.append(x)
    return strs.index(x)


fns, locs, msg = {}, {}, bytearray()
PID, TID = 4242, 4243
msg += f_bytes(1, f_int(1, s(KIND)) + f_int(2, s('nanoseconds')))


def loc_of(name):
    if name not in locs:
        if name not in fns:
            fns[name] = len(fns) + 1
        locs[name] = len(locs) + 1
    return locs[name]


# mapping 1: the program; mapping 2: the [task] pseudo-mapping
TASK_LOC = 1000
for frames, reason, ms in STACKS:
    leaf = '[on-cpu]' if reason == 'running' else '[off-cpu: %s]' % reason
    ids = [loc_of(leaf)] + [loc_of(f) for f in reversed(frames)] + [TASK_LOC]
    label = f_bytes(3, f_int(1, s('reason')) + f_int(2, s(reason)))
    msg += f_bytes(2, packed(1, ids) + packed(2, [ms * MS * SCALE]) + label)
msg += f_bytes(3, f_int(1, 1) + f_int(2, 0x400000) + f_int(3, 0x500000) + f_int(5, s('/usr/bin/shop')) +
               f_int(7, 1))
msg += f_bytes(3, f_int(1, 2) + f_int(5, s('[task]')))
for name, lid in locs.items():
    line = f_bytes(4, f_int(1, fns[name]))
    if name.startswith('['):  # a pseudo-frame: no mapping, no address
        msg += f_bytes(4, f_int(1, lid) + line)
    else:
        msg += f_bytes(4, f_int(1, lid) + f_int(2, 1) + f_int(3, 0x401000 + 16 * lid) + line)
msg += f_bytes(4, f_int(1, TASK_LOC) + f_int(2, 2) + f_int(3, PID << 32 | TID))
for name, fid in fns.items():
    msg += f_bytes(5, f_int(1, fid) + f_int(2, s(name)) + f_int(3, s(name)))
kind_s, ns_s = s(KIND), s('nanoseconds')
if TIME_S:
    msg += f_int(9, TIME_S * 1000000000) + f_int(10, 10 * 1000000000)
msg += f_bytes(11, f_int(1, kind_s) + f_int(2, ns_s))
msg += f_int(12, 1)  # period: one nanosecond per unit of value
msg += f_int(14, kind_s)  # default_sample_type
table = b''.join(f_bytes(6, x.encode()) for x in strs)
with open(OUT, 'wb') as f:
    f.write(gzip.compress(table + bytes(msg)))
for frames, reason, ms in STACKS:
    print(reason, ms * SCALE)
