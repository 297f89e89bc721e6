#!/usr/bin/env python3
"""Generates a large C++ program for bench/symbolize: many translation units, each a
namespace with class templates, member functions and small inline helpers that -O2
inlines into their callers (so addresses have inlined frames). Deterministic."""
import os
import sys

out, n_tu, n_fn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
for t in range(n_tu):
    L = [f"// generated: translation unit {t}", "#include <cstdint>", f"namespace tu{t} {{",
         "template <typename T> struct Acc {", "  T v;",
         "  inline T step(T x) { v = v * 31 + x; return v ^ (v >> 7); }",
         "  __attribute__((noinline)) T run(int n) { for (int i = 0; i < n; i++) step((T)i); return v; }",
         "};",
         "static inline uint64_t mixa(uint64_t x) { x ^= x >> 13; x *= 0x9e3779b97f4a7c15ull; return x ^ (x >> 29); }",
         "static inline uint64_t mixb(uint64_t x, int k) { for (int i = 0; i < k; i++) x = mixa(x + i); return x; }",
         "class Worker {", "public:"]
    for f in range(n_fn):
        L.append(f"  uint64_t m{f}(int x);")
    L += ["};"]
    for f in range(n_fn):
        body = [f"uint64_t Worker::m{f}(int x) {{", f"  uint64_t s = (uint64_t)x * {f + 3}u;"]
        if f % 3 == 0:
            body.append(f"  for (int i = 0; i < x; i++) s = mixb(s, {f % 5 + 1});")
        elif f % 3 == 1:
            body.append(f"  Acc<uint64_t> a{{s}}; s += a.run(x + {f % 7});")
            body.append(f"  Acc<uint32_t> b{{(uint32_t)s}}; s ^= b.run(x);")
        else:
            body.append(f"  for (int i = 0; i < x; i++) {{ s = mixa(s) + (s % {f + 7}u); if (s & 1) s = mixb(s, 2); }}")
        if f > 0:
            body.append(f"  if (x > 1) s += m{f - 1}(x - 1);")
        body += ["  return s;", "}"]
        L += body
    L += [f"uint64_t entry(int x) {{ Worker w; uint64_t s = 0; for (int i = 0; i < {n_fn}; i += 17) s += w.m{n_fn - 1}(x + i); return s; }}",
          "}"]
    with open(f"{out}/tu{t}.cc", "w") as fh:
        fh.write("\n".join(L) + "\n")
M = ["#include <cstdint>", "#include <cstdio>"]
M += [f"namespace tu{t} {{ uint64_t entry(int x); }}" for t in range(n_tu)]
M += ["int main(int argc, char **) {", "  uint64_t s = 0;"]
M += [f"  s += tu{t}::entry(argc);" for t in range(n_tu)]
M += ['  std::printf("%llu\\n", (unsigned long long)s);', "  return 0;", "}"]
with open(f"{out}/main.cc", "w") as fh:
    fh.write("\n".join(M) + "\n")
