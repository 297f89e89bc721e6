# Python workload for tests/integration/test_python.sh: known functions with a
# known split of CPU time. outer -> middle calls hot_a twice and hot_b once per
# round; both run the same loop, so hot_a has 2/3 of middle's time and hot_b 1/3.
# With "threads", a second thread runs worker -> spin_b at the same time, so the
# two threads' stacks must never mix. Prints its pid first (tests/lib.sh).
import os
import sys
import threading


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


def middle(seconds):
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hot_a(20000)
        hot_a(20000)
        hot_b(20000)


def outer(seconds):
    middle(seconds)


def spin_b(seconds):
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hot_b(20000)


def worker(seconds):
    spin_b(seconds)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    print(os.getpid(), flush=True)
    if "threads" in sys.argv[2:]:
        t = threading.Thread(target=worker, args=(seconds,))
        t.start()
        outer(seconds)
        t.join()
    else:
        outer(seconds)
