# Python workload for tests/integration/test_python.sh: known functions with a
# known split of CPU time. outer -> middle calls hot_a twice and hot_b once per
# round; both run the same loop, so hot_a has about 2/3 of middle's time and hot_b
# 1/3. The exact split is measured, not assumed: middle adds the main thread's
# CPU time (time.thread_time_ns) around each call, and SIGUSR1 prints the totals
# so far as one line "cpu HOT_A_NS HOT_B_NS" (the handler runs in the main
# thread, between two bytecodes). A test compares a profiler's share with the
# truth of the same window: one line before the recording, one after.
# With "threads", a second thread runs worker -> spin_b at the same time, so the
# two threads' stacks must never mix. With "cpu", the seconds are each thread's
# own CPU time, not wall time: as many samples on a busy machine as on an idle
# one, however long that takes.
# Prints its pid first (tests/integration/lib.sh's start_workload), then "ready"
# once the main thread is in its loop (after the first round).
import os
import signal
import sys
import threading
import time

cpu = (0, 0)  # main thread CPU ns inside hot_a, hot_b (whole calls)


def hot_a(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def hot_b(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def report(signum, frame):
    print("cpu", cpu[0], cpu[1], flush=True)


def clock_of_run():
    return time.thread_time if "cpu" in sys.argv[2:] else time.monotonic


def middle(seconds):
    global cpu
    clock = time.thread_time_ns
    now = clock_of_run()
    end = now() + seconds
    ready = False
    while now() < end:
        t0 = clock()
        hot_a(20000)
        hot_a(20000)
        t2 = clock()
        hot_b(20000)
        t3 = clock()
        cpu = (cpu[0] + t2 - t0, cpu[1] + t3 - t2)  # one store: a report is whole rounds
        if not ready:
            print("ready", flush=True)
            ready = True


def outer(seconds):
    middle(seconds)


def spin_b(seconds):
    now = clock_of_run()
    end = now() + seconds
    while now() < end:
        hot_b(20000)


def worker(seconds):
    spin_b(seconds)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    signal.signal(signal.SIGUSR1, report)
    print(os.getpid(), flush=True)
    if "threads" in sys.argv[2:]:
        t = threading.Thread(target=worker, args=(seconds,))
        t.start()
        outer(seconds)
        t.join()
    else:
        outer(seconds)
