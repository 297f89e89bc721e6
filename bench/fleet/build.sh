#!/usr/bin/env bash
# bench/fleet/build.sh DIR N_OBJS N_FILL: builds what bench/fleet and
# tests/integration/test_memory_limit.sh run, into DIR (kept between runs: an
# object already built is not built again): the generated objects
# DIR/gen/libfleetobjK.so (gen_objs.py: a hot chain built -O2
# -fomit-frame-pointer, so that only unwind tables walk it, and N_FILL filler
# functions of 3 CFI rows each), DIR/genhot, DIR/llvmbusy and, when javac is
# installed, DIR/Busy.class. A few seconds per object of 110000 fillers.
set -euo pipefail
D=$1 N=$2 FILL=$3
SRC=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$D/gen"
if [ ! -f "$D/gen/fill-$FILL" ]; then
	rm -f "$D"/gen/libfleetobj*.so "$D"/gen/fill-*
	touch "$D/gen/fill-$FILL"
fi
missing=0
for k in $(seq 0 $((N - 1))); do [ -f "$D/gen/libfleetobj$k.so" ] || missing=1; done
[ -f "$D/gen/genhot.c" ] || missing=1
[ $missing = 0 ] || python3 "$SRC/gen_objs.py" "$D/gen" "$N" "$FILL"
for k in $(seq 0 $((N - 1))); do
	so=$D/gen/libfleetobj$k.so
	[ -f "$so" ] && continue
	echo "bench/fleet/build.sh: building $so" >&2
	nice gcc -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -fPIC -shared \
		-o "$so.tmp" "$D/gen/fleetobj$k.c" "$D/gen/fill$k.s"
	mv "$so.tmp" "$so"
done
rm -f "$D"/gen/fill*.s # 26 MB each: only the objects are kept
[ "$D/genhot" -nt "$D/gen/genhot.c" ] ||
	gcc -O2 -fomit-frame-pointer -rdynamic -o "$D/genhot" "$D/gen/genhot.c" -ldl
[ "$D/llvmbusy" -nt "$SRC/llvmbusy.c" ] || gcc -O2 -o "$D/llvmbusy" "$SRC/llvmbusy.c" -ldl
if command -v javac > /dev/null; then
	[ "$D/Busy.class" -nt "$SRC/Busy.java" ] || javac -d "$D" "$SRC/Busy.java"
fi
