#!/usr/bin/env bash
# Every output format hearth record writes is read by a real client:
# pprof by `go tool pprof -top` and `-raw` (no warnings), folded stacks in the
# flamegraph.pl grammar, the SVG in headless Chromium (names visible, click zooms).
. "$(dirname "$0")/lib.sh"
need_root record_outputs
go_env

# 20 s: six records of 1.5 s each, plus start-up and symbolization (DWARF since issue 3)
pid=$(start_workload "$W/split" 20)
for out in p.pb.gz p.pprof p.folded p.txt p.svg; do
	"$HEARTH" record -p "$pid" -F 499 -d 1.5 -q -o "$T/$out" 2> "$T/err.$out" ||
		fail "record_$out" "exit $?: $(cat "$T/err.$out")"
done
"$HEARTH" record -p "$pid" -F 499 -d 1.5 -q --format pprof -o "$T/forced.out" 2> /dev/null ||
	fail record_forced_format "exit $?"

# pprof: gzip magic, then go tool pprof reads it without a warning.
for f in p.pb.gz p.pprof forced.out; do
	if [ "$(head -c2 "$T/$f" | od -An -tx1 | tr -d ' ')" != "1f8b" ]; then
		fail "pprof_gzip_$f" "not gzip"
		continue
	fi
	go tool pprof -top "$T/$f" > "$T/top.$f" 2> "$T/toperr.$f"
	rc=$?
	if [ $rc -eq 0 ] && ! grep -qi warn "$T/toperr.$f" && grep -q split_hot_a "$T/top.$f"; then
		pass "go_pprof_top_$f"
	else
		fail "go_pprof_top_$f" "exit $rc: $(cat "$T/toperr.$f") $(head -5 "$T/top.$f")"
	fi
	go tool pprof -raw "$T/$f" > "$T/raw.$f" 2> "$T/rawerr.$f"
	rc=$?
	if [ $rc -eq 0 ] && ! grep -qi warn "$T/rawerr.$f" && grep -q 'samples/count cpu/nanoseconds' "$T/raw.$f" &&
		grep -q 'pid:\[' "$T/raw.$f" && grep -q 'process:\[split\]' "$T/raw.$f" && grep -q 'comm:\[split\]' "$T/raw.$f"; then
		pass "go_pprof_raw_$f"
	else
		fail "go_pprof_raw_$f" "exit $rc: $(cat "$T/rawerr.$f") $(head -20 "$T/raw.$f")"
	fi
done
# Mappings carry file names and build-ids; the period is 1e9/HZ.
if grep -qE 'libsplitlib.so.*[0-9a-f]{40}' "$T/raw.p.pb.gz" && grep -q 'Period: 2004008' "$T/raw.p.pb.gz"; then
	pass pprof_mappings_and_period
else
	fail pprof_mappings_and_period "$(grep -iE 'period|libsplit' "$T/raw.p.pb.gz" | head)"
fi

# folded: flamegraph.pl's grammar — "frame;frame;... COUNT", no empty frames.
for f in p.folded p.txt; do
	bad=$(grep -cvE '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$T/$f")
	lines=$(wc -l < "$T/$f")
	if [ "$lines" -gt 0 ] && [ "$bad" -eq 0 ] && grep -qE '^split;.*;main;split_round;split_hot_a [0-9]+$' "$T/$f"; then
		pass "folded_grammar_$f ($lines stacks)"
	else
		fail "folded_grammar_$f" "$bad of $lines lines malformed: $(grep -vE '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$T/$f" | head -3)"
	fi
done

# SVG: opens in Chromium, shows the workload's functions, a click zooms in.
mkdir -p "$HEARTH_ROOT/build/test-output"
shot=$HEARTH_ROOT/build/test-output/record-flamegraph.png
if node "$HEARTH_ROOT/tests/ui/svg_check.mjs" "$T/p.svg" "$shot" split_hot_b > "$T/svg.json" 2> "$T/svg.err"; then
	if node -e '
		const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
		const need = ["main", "split_round", "split_hot_a", "split_hot_b", "lib_hot_c"];
		const miss = need.filter((n) => !r.frames.includes(n));
		if (miss.length) { console.log("missing frames " + miss); process.exit(1); }
		if (!r.titles.some((t) => /split_hot_a \(\d+ samples, [\d.]+%\)/.test(t))) { console.log("no title with samples and percent"); process.exit(1); }
		if (!(r.zoomed && r.zoomed.after > r.zoomed.before * 2)) { console.log("click did not zoom " + JSON.stringify(r.zoomed)); process.exit(1); }
		if (r.errors.length) { console.log("page errors " + r.errors); process.exit(1); }
	' "$T/svg.json" > "$T/svg.why"; then
		pass "svg_in_chromium (screenshot $shot)"
	else
		fail svg_in_chromium "$(cat "$T/svg.why")"
	fi
else
	fail svg_in_chromium "chromium run failed: $(tail -5 "$T/svg.err")"
fi
finish
