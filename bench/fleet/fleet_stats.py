#!/usr/bin/env python3
"""bench/fleet/fleet_stats.py: readings for bench/fleet.

  fleet_stats.py mapbytes PID      bytes of the BPF maps PID holds (memlock of
                                   each distinct map in /proc/PID/fdinfo), and
                                   how much of them is mapped into PID and
                                   resident (Rss of its anon_inode:bpf-map
                                   mappings): "MEMLOCK RESIDENT"
  fleet_stats.py complete FILE [COMM...]
                                   from folded stacks (hearth's
                                   /api/profile?format=folded: "COMM;ROOT;...;LEAF
                                   N"), the share of samples whose stack reaches
                                   the thread's start (its root frame is _start,
                                   clone/clone3, start_thread or thread_start),
                                   over samples with user frames; one line for
                                   all and one per COMM given:
                                   "NAME PCT COMPLETE TOTAL"
"""
import os
import re
import sys

STARTS = {"_start", "clone", "clone3", "__clone", "__clone3", "start_thread", "thread_start",
          "__libc_start_main", "__libc_start_call_main"}

PSEUDO = re.compile(r"^\[(task|on-cpu|off-cpu[^]]*)\]$")


def mapbytes(pid):
    seen, memlock = set(), 0
    fddir = "/proc/%d/fd" % pid
    for fd in os.listdir(fddir):
        try:
            if os.readlink(os.path.join(fddir, fd)) != "anon_inode:bpf-map":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        mid = info.get("map_id", fd).strip()
        if mid in seen:
            continue
        seen.add(mid)
        memlock += int(info.get("memlock", "0"))
    resident, cur = 0, False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                cur = line.rstrip().endswith("anon_inode:bpf-map")
            elif cur and line.startswith("Rss:"):
                resident += int(line.split()[1]) * 1024
    print(memlock, resident)


def complete(path, comms):
    tot, ok = {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            stack, _, n = line.rpartition(" ")
            if not stack or not n.isdigit():
                continue
            frames = stack.split(";")
            comm = frames[0]
            user = [x for x in frames[1:]
                    if not x.endswith("_[k]") and not PSEUDO.match(x)]
            if not user:
                continue  # kernel threads: no user stack to judge
            root = re.sub(r"@.*$", "", user[0])
            good = root in STARTS
            for key in ("all", comm):
                tot[key] = tot.get(key, 0) + int(n)
                ok[key] = ok.get(key, 0) + (int(n) if good else 0)
    for key in ["all"] + comms:
        # a name also counts its versioned ones: python3 is python3.11's comm
        names = [key] + [c for c in tot if key != "all" and c.startswith(key + ".")]
        t, g = sum(tot.get(c, 0) for c in names), sum(ok.get(c, 0) for c in names)
        print("%s %.1f %d %d" % (key, 100.0 * g / t if t else 0.0, g, t))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "mapbytes":
        mapbytes(int(sys.argv[2]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "complete":
        complete(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
