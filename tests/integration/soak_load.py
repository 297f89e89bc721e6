#!/usr/bin/env python3
"""Load generator for test_soak.sh (standard library only).

Runs for --seconds against one hearth server at --url:
  - --agents pusher threads, each an "agent" pushing profiles one after another:
    valid ones (gzipped pprof built by the small encoder below, or folded text),
    every one under a unique series label seq="<phase>-<agent>-<n>" with a known
    sample total, mixed with hostile ones (truncated gzip, garbage bytes, protobuf
    fields declaring huge lengths, a decompression bomb, malformed folded lines,
    bad labels, bad arguments) that must each get a 4xx;
  - --queriers threads running merges, series lists, label values and timelines;
  - one /healthz prober (every 100 ms, 2 s timeout);
  - one RSS sampler reading /proc/PID/status of the pid in --pid-file.

While the file --down-flag exists the server is down on purpose (the test
killed it): refused connections and missing processes are then not failures.

Writes --acked (one "seq total" line per 2xx-acknowledged valid push) and
--stats (JSON figures and failure counts; test_soak.sh asserts on them).
"""
import argparse
import gzip
import http.client
import json
import os
import random
import threading
import time
import urllib.parse
import zlib

# ---- a minimal profile.proto encoder (field numbers from pprof's profile.proto) ----


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


def f_varint(num, v):
    return varint(num << 3) + varint(v)


def f_bytes(num, b):
    return varint((num << 3) | 2) + varint(len(b)) + b


def f_packed(num, vals):
    return f_bytes(num, b"".join(varint(v) for v in vals))


def pprof_profile(stacks):
    """stacks: list of (frames root-first, count). Values: samples/count and
    cpu/nanoseconds at 10 ms a sample. Returns the uncompressed message."""
    strings = [""]
    sidx = {"": 0}

    def s(x):
        if x not in sidx:
            sidx[x] = len(strings)
            strings.append(x)
        return sidx[x]

    funcs, out = {}, bytearray()
    out += f_bytes(1, f_varint(1, s("samples")) + f_varint(2, s("count")))
    out += f_bytes(1, f_varint(1, s("cpu")) + f_varint(2, s("nanoseconds")))
    for frames, count in stacks:
        locs = []
        for name in reversed(frames):  # leaf first
            if name not in funcs:
                funcs[name] = len(funcs) + 1
            locs.append(funcs[name])
        out += f_bytes(2, f_packed(1, locs) + f_packed(2, [count, count * 10000000]))
    for name, fid in funcs.items():
        # location id == function id: one line each
        out += f_bytes(4, f_varint(1, fid) + f_varint(3, 0x1000 + fid) + f_bytes(4, f_varint(1, fid)))
        out += f_bytes(5, f_varint(1, fid) + f_varint(2, s(name)) + f_varint(3, s(name)))
    body = bytes(out)
    tail = f_varint(9, time.time_ns()) + f_varint(10, 10 * 10**9)
    tail += f_bytes(11, f_varint(1, s("cpu")) + f_varint(2, s("nanoseconds"))) + f_varint(12, 10000000)
    strtab = b"".join(f_bytes(6, x.encode()) for x in strings)
    return body + strtab + tail


TOTAL = 8  # samples in every valid push, pprof or folded


def valid_stacks(seq):
    return [(["main", "serve", "leaf_" + seq.replace("-", "_")], 5), (["main", "gc"], 3)]


def make_bomb():
    """gzip of a pprof whose string table inflates past 256 MiB of zeros."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [c.compress(varint((6 << 3) | 2) + varint(300 << 20))]
    zero = bytes(1 << 20)
    for _ in range(300):
        parts.append(c.compress(zero))
    parts.append(c.flush())
    return b"".join(parts)


# ---- the run ----


class Run:
    def __init__(self, a):
        self.a = a
        u = urllib.parse.urlparse(a.url)
        self.host, self.port = u.hostname, u.port
        self.deadline = time.monotonic() + a.seconds
        self.lock = threading.Lock()
        self.acked = []  # (seq, total)
        self.lat = []  # seconds of acknowledged valid pushes
        self.c = {}  # counters
        self.fail_notes = []
        self.hz_max = 0.0
        self.hz_n = 0
        self.rss_peak = 0
        self.rss_last = 0
        self.bombs_left = a.bombs
        self.bomb_lock = threading.Lock()  # one bomb at a time: each costs ~256 MiB
        self.bomb = make_bomb() if a.bombs else b""

    def down(self):
        return os.path.exists(self.a.down_flag)

    def count(self, key, note=None):
        with self.lock:
            self.c[key] = self.c.get(key, 0) + 1
            if note and len(self.fail_notes) < 20:
                self.fail_notes.append(note)

    def request(self, method, path, body=None, timeout=30.0):
        """(status, seconds) or (None, seconds) on a connection error."""
        t0 = time.monotonic()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body,
                         headers={"Content-Type": "application/octet-stream"} if body is not None else {})
            r = conn.getresponse()
            r.read()
            return r.status, time.monotonic() - t0
        except (OSError, http.client.HTTPException):
            return None, time.monotonic() - t0
        finally:
            conn.close()

    # -- pushes --

    def ingest_path(self, name, fmt, extra=""):
        now = int(time.time())
        return "/ingest?" + urllib.parse.urlencode(
            {"name": name, "format": fmt, "from": now - 10, "until": now}) + extra

    def push_valid(self, agent, n):
        seq = "%s-%d-%d" % (self.a.phase, agent, n)
        name = 'soak{agent="a%d",seq="%s"}' % (agent, seq)
        if n % 2:
            fmt, body = "pprof", gzip.compress(pprof_profile(valid_stacks(seq)), 1)
        else:
            fmt = "folded"
            body = "".join("%s %d\n" % (";".join(f), c) for f, c in valid_stacks(seq)).encode()
        st, dt = self.request("POST", self.ingest_path(name, fmt), body)
        if st is not None and 200 <= st < 300:
            with self.lock:
                self.acked.append((seq, TOTAL))
                self.lat.append(dt)
            self.count("valid_acked")
        elif st is None:
            self.count("valid_conn_error")
        elif st >= 500:
            self.count("valid_5xx")
        else:
            self.count("valid_4xx", "valid %s push %s got %d" % (fmt, seq, st))

    def hostile(self, agent, n):
        seq = "h%s-%d-%d" % (self.a.phase, agent, n)
        good = gzip.compress(pprof_profile(valid_stacks(seq)), 1)
        name = "soakbad{seq=\"%s\"}" % seq
        k = random.randrange(11)
        if k == 10 and self.bombs_left > 0:
            with self.lock:
                self.bombs_left -= 1
            kind, path, body = "bomb", self.ingest_path(name, "pprof"), self.bomb
        elif k == 0:
            kind, path, body = "truncated_gzip", self.ingest_path(name, "pprof"), good[: len(good) // 2]
        elif k == 1:
            kind, path, body = "garbage", self.ingest_path(name, "pprof"), b"\xff\xff" + os.urandom(2000)
        elif k == 2:  # string_table entry declaring 1 TiB
            kind, path, body = "huge_length", self.ingest_path(name, "pprof"), varint((6 << 3) | 2) + varint(1 << 40) + b"abc"
        elif k == 3:  # a sample declaring 2^62 bytes, inside gzip
            kind, path = "huge_nested_length", self.ingest_path(name, "pprof")
            body = gzip.compress(varint((2 << 3) | 2) + varint(1 << 62) + b"\x0a\x01\x01")
        elif k == 4:
            kind, path, body = "bad_folded", self.ingest_path(name, "folded"), b"main;work notanumber\n\x00\x01\x02 7\n"
        elif k == 5:
            kind, path, body = "bad_label_name", self.ingest_path('soakbad{1bad="x"}', "folded"), b"a;b 1\n"
        elif k == 6:
            big = 'soakbad{v="%s"}' % ("x" * 2000)
            kind, path, body = "label_too_long", self.ingest_path(big, "folded"), b"a;b 1\n"
        elif k == 7:
            many = "soakbad{" + ",".join('l%d="v"' % i for i in range(40)) + "}"
            kind, path, body = "too_many_labels", self.ingest_path(many, "folded"), b"a;b 1\n"
        elif k == 8:
            kind, path, body = "unterminated_name", self.ingest_path('soakbad{a="x', "folded"), b"a;b 1\n"
        else:
            kind = "bad_args"
            path = "/ingest?" + urllib.parse.urlencode({"name": name, "format": "xml", "from": 20, "until": 10})
            body = b"a;b 1\n"
        if kind == "bomb":
            with self.bomb_lock:
                st, _ = self.request("POST", path, body)
        else:
            st, _ = self.request("POST", path, body)
        if st is None:
            self.count("hostile_conn_error")
        elif 400 <= st < 500:
            self.count("hostile_4xx")
        else:
            self.count("hostile_not_4xx", "hostile %s got %d" % (kind, st))

    def pusher(self, agent):
        n = 0
        rnd = random.Random(agent)
        gap = 1.0 / self.a.rate
        while time.monotonic() < self.deadline:
            n += 1
            t0 = time.monotonic()
            if rnd.random() < self.a.hostile:
                self.hostile(agent, n)
            else:
                self.push_valid(agent, n)
            time.sleep(max(0.0, gap - (time.monotonic() - t0)))

    # -- queries --

    def querier(self, i):
        rnd = random.Random(100 + i)
        while time.monotonic() < self.deadline:
            now = int(time.time())
            q = urllib.parse.quote("soak{}")
            rng = "&from=%d&until=%d" % (now - 600, now + 60)
            path = rnd.choice([
                "/api/profile?format=tree&maxNodes=256&query=" + q + rng,
                "/api/profile?format=top&query=" + q + rng,
                "/api/profile?format=folded&query=" + urllib.parse.quote('soak{agent="a1"}') + rng,
                "/api/series?query=" + q + rng,
                "/api/label/seq/values?" + rng[1:],
                "/api/timeline?step=10s&groupBy=agent&query=" + q + rng,
            ])
            st, dt = self.request("GET", path, timeout=30.0)
            if st == 200:
                self.count("query_ok")
            elif st is None and self.down():
                self.count("query_conn_error_down")
            else:
                self.count("query_failed", "query %s got %s after %.1f s" % (path[:60], st, dt))
            time.sleep(0.05)

    # -- health and memory --

    def prober(self):
        while time.monotonic() < self.deadline:
            was_down = self.down()
            st, dt = self.request("GET", "/healthz", timeout=2.0)
            if self.down() or was_down:
                pass  # killed on purpose: no answer expected
            elif st == 200:
                with self.lock:
                    self.hz_n += 1
                    self.hz_max = max(self.hz_max, dt)
                if dt > 1.0:
                    self.count("healthz_slow", "healthz took %.2f s" % dt)
            else:
                self.count("healthz_failed", "healthz answered %s after %.2f s" % (st, dt))
            time.sleep(0.1)

    def rss(self):
        while time.monotonic() < self.deadline:
            try:
                with open(self.a.pid_file) as f:
                    pid = int(f.read().strip())
                with open("/proc/%d/status" % pid) as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            kb = int(line.split()[1])
                            self.rss_peak = max(self.rss_peak, kb * 1024)
                            self.rss_last = kb * 1024
            except (OSError, ValueError):
                if not self.down():
                    self.count("server_gone", "server pid gone while it should be up")
            time.sleep(0.5)

    def run(self):
        ts = [threading.Thread(target=self.pusher, args=(i,)) for i in range(self.a.agents)]
        ts += [threading.Thread(target=self.querier, args=(i,)) for i in range(self.a.queriers)]
        ts += [threading.Thread(target=self.prober), threading.Thread(target=self.rss)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        lat = sorted(self.lat)

        def pct(p):
            return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0.0

        with open(self.a.acked, "a") as f:
            for seq, total in self.acked:
                f.write("%s %d\n" % (seq, total))
        stats = dict(self.c)
        stats.update({
            "phase": self.a.phase,
            "ingest_p50_ms": round(pct(0.50) * 1000, 1),
            "ingest_p99_ms": round(pct(0.99) * 1000, 1),
            "ingest_max_ms": round(lat[-1] * 1000, 1) if lat else 0.0,
            "healthz_probes": self.hz_n,
            "healthz_max_ms": round(self.hz_max * 1000, 1),
            "rss_peak_bytes": self.rss_peak,
            "rss_last_bytes": self.rss_last,
            "notes": self.fail_notes,
        })
        with open(self.a.stats, "w") as f:
            json.dump(stats, f)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--phase", required=True)
    p.add_argument("--agents", type=int, default=4)
    p.add_argument("--queriers", type=int, default=2)
    p.add_argument("--rate", type=float, default=25.0, help="pushes per second per agent, at most")
    p.add_argument("--hostile", type=float, default=0.25, help="share of hostile pushes")
    p.add_argument("--bombs", type=int, default=0, help="decompression bombs to send at most")
    p.add_argument("--pid-file", required=True)
    p.add_argument("--down-flag", required=True)
    p.add_argument("--acked", required=True)
    p.add_argument("--stats", required=True)
    Run(p.parse_args()).run()


if __name__ == "__main__":
    main()
