#!/usr/bin/env python3
"""Generates the workload of tests/integration/test_unwind_heat.sh: N_LIBS shared
objects built without frame pointers, each with FILLER functions whose CFI makes
its unwind table about ROWS rows (one row-map chunk is 4096), and a hot chain
hot_libK -> mid5_libK .. mid0_libK -> leaf_libK; and main.c, whose hot code moves
from object to object over time (argv: seconds, phase ms, hot objects).

usage: unwind_heat_gen.py OUTDIR N_LIBS FILLER"""
import os
import sys

out, n_libs, n_fill = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
for k in range(n_libs):
    L = ["#include <stdint.h>",
         "typedef uint64_t (*fn_t)(uint64_t, int);",
         f"fn_t volatile sink_lib{k};"]
    for i in range(n_fill):
        # callee-saved registers live across calls and several return paths:
        # pushes, pops and remembered states, about a dozen CFI rows each
        L.append(f"""__attribute__((noinline)) uint64_t f{i}_lib{k}(uint64_t x, int d)
{{
	uint64_t a = x * {i + 3}u + {k}, b = x ^ (x >> {i % 13 + 1}), c = x + {i * 7 + 1}u;
	if (d <= 0)
		return a ^ b;
	a += sink_lib{k}(b, d - 1);
	if (a & {1 << (i % 5)})
		return a + c;
	b += sink_lib{k}(a, d - 2);
	c += sink_lib{k}(a + b, d - 3);
	if (b & 2)
		return a * b - c;
	return a + b + c;
}}""")
    L.append(f"""__attribute__((noinline)) uint64_t leaf_lib{k}(uint64_t x)
{{
	for (int i = 0; i < 4000; i++)
		x = (x * 6364136223846793005ull + 1442695040888963407ull) ^ (x >> 7);
	return x;
}}""")
    prev = f"leaf_lib{k}"
    for j in range(6):
        L.append(f"""__attribute__((noinline)) uint64_t mid{j}_lib{k}(uint64_t x)
{{
	uint64_t r = {prev}(x + {j});
	return r ^ (x * 3);
}}""")
        prev = f"mid{j}_lib{k}"
    L.append(f"""uint64_t hot_lib{k}(uint64_t x)
{{
	uint64_t r = {prev}(x);
	return r + 1;
}}
uint64_t fill_lib{k}(uint64_t x)
{{
	return sink_lib{k} ? sink_lib{k}(x, 3) : f0_lib{k}(x, 0);
}}""")
    open(os.path.join(out, f"lib{k}.c"), "w").write("\n".join(L) + "\n")

M = ["#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>", "#include <time.h>"]
for k in range(n_libs):
    M.append(f"uint64_t hot_lib{k}(uint64_t); uint64_t fill_lib{k}(uint64_t);")
M.append("static uint64_t (*const hot[])(uint64_t) = {" +
         ", ".join(f"hot_lib{k}" for k in range(n_libs)) + "};")
M.append("static uint64_t (*const fill[])(uint64_t) = {" +
         ", ".join(f"fill_lib{k}" for k in range(n_libs)) + "};")
M.append(f"""static double now_ms(void)
{{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}}
__attribute__((noinline)) uint64_t run_phase(int k, uint64_t x)
{{
	uint64_t r = hot[k](x);
	return r ^ (x << 1);
}}
int main(int argc, char **argv)
{{
	double secs = argc > 1 ? atof(argv[1]) : 10, phase = argc > 2 ? atof(argv[2]) : 2000;
	int n_hot = argc > 3 ? atoi(argv[3]) : {n_libs}, calls[{n_libs}] = {{0}};
	double t0 = now_ms(), t;
	uint64_t x = 1;

	if (n_hot < 1 || n_hot > {n_libs})
		n_hot = {n_libs};
	for (int k = 0; k < {n_libs}; k++)
		x += fill[k](x); /* every object mapped and touched */
	while ((t = now_ms() - t0) < secs * 1e3) {{
		int k = (int)(t / phase) % n_hot;
		x = run_phase(k, x);
		calls[k]++;
	}}
	for (int k = 0; k < n_hot; k++)
		printf("lib%d %d\\n", k, calls[k]);
	return (int)(x & 1) * 0;
}}""")
open(os.path.join(out, "main.c"), "w").write("\n".join(M) + "\n")
