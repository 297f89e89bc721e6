#!/usr/bin/env bash
# debuginfod: a real `debuginfod` server started here on loopback serves the debug file
# of a stripped test binary; with DEBUGINFOD_URLS pointing at it, hearth names the
# binary's frames (with inlines) as it does unstripped, and caches the file on disk.
# A server that never answers does not stall symbolization.
. "$(dirname "$0")/lib.sh"
command -v debuginfod > /dev/null || { skip debuginfod "debuginfod is not installed"; finish; }

mkdir -p "$T/srv" "$T/cache"
cp "$W/inlined.debug" "$T/srv/"
objcopy --strip-all "$W/inlined" "$T/prog" # no debuglink: only the build-id leads there
bid=$(readelf -n "$W/inlined" | awk '/Build ID/ { print $3 }')
# debuginfod takes a port number, not 0: pick one below the ephemeral range, and
# another when that one is taken (a listener or a connection of someone else).
for attempt in 1 2 3 4 5; do
	port=$((20000 + RANDOM % 12000))
	# bounded lifetime: killed at exit by lib.sh, and by timeout at worst
	timeout 120 debuginfod -p "$port" -d "$T/db.sqlite" -F "$T/srv" -t 1 -g 0 > "$T/srv.log" 2>&1 &
	BG_PIDS+=($!)
	url=http://127.0.0.1:$port
	for _ in $(seq 100); do
		curl -sf -o /dev/null "$url/buildid/$bid/debuginfo" && break 2
		grep -q "Address already in use" "$T/srv.log" && break
		sleep 0.2
	done
done
curl -sf -o /dev/null "$url/buildid/$bid/debuginfo" || { fail debuginfod_server "did not serve $bid: $(tail -3 "$T/srv.log")"; finish; }

nm -S "$W/inlined" | awk '$4 == "inl_hot" { print $1, $2 }' > "$T/range"
read -r a s < "$T/range"
for ((i = 0; i < 16#$s; i += 2)); do printf '0x%x\n' $((16#$a + i)); done > "$T/addrs"
"$HEARTH" symbolize --obj "$W/inlined" --inlines < "$T/addrs" > "$T/want.out"
export DEBUGINFOD_CACHE_PATH=$T/cache
DEBUGINFOD_URLS=$url "$HEARTH" symbolize --obj "$T/prog" --inlines --stats < "$T/addrs" > "$T/got.out" 2> "$T/got.err"
if cmp -s "$T/want.out" "$T/got.out" && grep -q inl_mix "$T/got.out" && grep -q '^debuginfod_files 1' "$T/got.err"; then
	pass "debuginfod_debug_file_used: $(grep -c inl_mix "$T/got.out") inlined frames"
else
	fail debuginfod_debug_file_used "$(diff "$T/want.out" "$T/got.out" | head -4) $(cat "$T/got.err")"
fi
if find "$T/cache" -type f -name debuginfo | grep -q .; then
	pass debuginfod_cached_on_disk
else
	fail debuginfod_cached_on_disk "nothing under $T/cache"
fi

# A server that accepts connections and never answers: no stall without waiting.
python3 -c "
import socket, time, sys
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(16)
print(s.getsockname()[1], flush=True); time.sleep(60)" > "$T/blackhole.port" &
BG_PIDS+=($!)
for _ in $(seq 50); do [ -s "$T/blackhole.port" ] && break; sleep 0.1; done
mkdir -p "$T/cache2"
t0=$(date +%s%N)
DEBUGINFOD_CACHE_PATH=$T/cache2 DEBUGINFOD_URLS=http://127.0.0.1:$(cat "$T/blackhole.port") \
	timeout 20 "$HEARTH" symbolize --obj "$T/prog" --debuginfod-wait 0 < "$T/addrs" > "$T/bh.out"
rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
if [ $rc -eq 0 ] && [ $ms -lt 3000 ]; then
	pass "silent_server_never_stalls: ${ms} ms for $(wc -l < "$T/addrs") addresses"
else
	fail silent_server_never_stalls "exit $rc after ${ms} ms"
fi
finish
