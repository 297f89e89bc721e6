#!/usr/bin/env python3
"""bench/overhead_probe.py: exact per-process cost readings for bench/overhead.

  overhead_probe.py stats        enables the kernel's BPF run-time statistics
                                 through BPF_ENABLE_STATS and holds them on until
                                 stdin closes (prints "ready" once they are on)
  overhead_probe.py snap [--metrics-before URL | --metrics-after URL] PID...
                                 one reading: a line "t MONOTONIC_NS", then per
                                 PID "PID CPU_NS BPF_NS BPF_RUNS RSS_KB HWM_KB",
                                 then "m NAME VALUE" for each hearth_agent_*
                                 counter of URL/metrics, fetched just before or
                                 just after the reading (so that the fetch falls
                                 outside the measured window at both ends)
  overhead_probe.py window SECS OUT0 OUT1 [--metrics URL] PID...
                                 a measured window: a snap into OUT0 (metrics
                                 fetched before), SECS seconds of sleep, a snap
                                 into OUT1 (metrics fetched after), in one
                                 process so that no interpreter start-up falls
                                 inside the window

CPU_NS is the process's CPU clock (user + sys of all its threads, live and
exited, in nanoseconds: clock_gettime on the clock id of another process), so
a 60 s window resolves far below /proc/PID/stat's 10 ms ticks. BPF_NS sums
run_time_ns of the BPF programs the process holds open (each program once,
found through /proc/PID/fdinfo) and BPF_RUNS is the run_cnt of the most-run one
(the sampling program: each run is one sample taken), which is where a
profiler's in-kernel work is counted: it runs in interrupt context and is
charged to whichever task it interrupted, not to the profiler.

The statistics are held through a file descriptor rather than the
kernel.bpf_stats_enabled sysctl because the kernel counts both as separate
references: another program resetting the sysctl cannot switch them off under
the bench, and nothing global needs restoring afterwards.
"""
import ctypes
import os
import sys
import time
import urllib.request

SYS_BPF = 321  # x86-64
BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0


def hold_stats():
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(128)  # union bpf_attr, enable_stats.type = 0
    ctypes.c_uint32.from_buffer(attr, 0).value = BPF_STATS_RUN_TIME
    fd = libc.syscall(SYS_BPF, BPF_ENABLE_STATS, attr, ctypes.c_uint(len(attr)))
    if fd < 0:
        err = ctypes.get_errno()
        sys.exit("overhead_probe: BPF_ENABLE_STATS failed: %s" % os.strerror(err))
    print("ready", flush=True)
    sys.stdin.read()  # until the bench closes the pipe or exits
    os.close(fd)


def cpu_ns(pid):
    # CPUCLOCK_SCHED of the whole thread group: ((~pid) << 3) | 2
    return time.clock_gettime_ns(((~pid) << 3) | 2)


def bpf_progs(pid):
    """Sum of run_time_ns over the distinct BPF programs pid holds, and the
    largest run_cnt among them."""
    seen, run_ns, runs = set(), 0, 0
    fddir = "/proc/%d/fd" % pid
    for fd in os.listdir(fddir):
        try:
            if os.readlink(os.path.join(fddir, fd)) != "anon_inode:bpf-prog":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue  # closed between listdir and open
        pid_key = info.get("prog_id", fd).strip()
        if pid_key in seen:
            continue
        seen.add(pid_key)
        run_ns += int(info.get("run_time_ns", "0"))
        runs = max(runs, int(info.get("run_cnt", "0")))
    return run_ns, runs


def mem_kb(pid):
    rss = hwm = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return rss, hwm


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return [line.split()[:2] for line in text.splitlines()
            if line.startswith("hearth_agent_")]


def snap(args, out_file=sys.stdout):
    before = after = None
    if args[0] == "--metrics-before":
        before, args = args[1], args[2:]
    elif args[0] == "--metrics-after":
        after, args = args[1], args[2:]
    m = metrics(before) if before else []
    out = ["t %d" % time.clock_gettime_ns(time.CLOCK_MONOTONIC)]
    for pid in [int(p) for p in args]:
        c = cpu_ns(pid)
        b, r = bpf_progs(pid)
        rss, hwm = mem_kb(pid)
        out.append("%d %d %d %d %d %d" % (pid, c, b, r, rss, hwm))
    if after:
        m = metrics(after)
    out += ["m %s %s" % (k, v) for k, v in m]
    print("\n".join(out), file=out_file, flush=True)


def window(args):
    secs, out0, out1, rest = float(args[0]), args[1], args[2], args[3:]
    url = None
    if rest[0] == "--metrics":
        url, rest = rest[1], rest[2:]
    with open(out0, "w") as f:
        snap((["--metrics-before", url] if url else []) + rest, f)
    time.sleep(secs)
    with open(out1, "w") as f:
        snap((["--metrics-after", url] if url else []) + rest, f)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "stats":
        hold_stats()
    elif len(sys.argv) >= 3 and sys.argv[1] == "snap":
        snap(sys.argv[2:])
    elif len(sys.argv) >= 6 and sys.argv[1] == "window":
        window(sys.argv[2:])
    else:
        sys.exit("usage: overhead_probe.py stats | snap [--metrics-before|--metrics-after URL]"
                 " PID... | window SECS OUT0 OUT1 [--metrics URL] PID...")


if __name__ == "__main__":
    main()
