#!/usr/bin/env bash
# OTLP profiles in: POST /v1development/profiles with requests encoded by
# Debian's protoc (--encode, from proto/otlp/ and the text fixtures in
# tests/fixtures/otlp/). Native frames sent without names are symbolized
# through a real debuginfod by build-id, or kept as module+0xoff.
# Bad input (truncated, an earlier layout, gzip bombs, too large, wrong type)
# gets a 4xx naming the problem and stores nothing. (The CPU fixture in
# protobuf and OTLP/JSON read back with its stacks, values and labels, on both
# backends: api_suite.sh.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
command -v protoc > /dev/null || { fail protoc "protoc is not installed (protobuf-compiler)"; finish; }

FX=$HEARTH_ROOT/tests/fixtures/otlp
PROTO=$HEARTH_ROOT/proto/otlp
REQ=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest
NOW_NS=$(date +%s%N)

# encode FIXTURE OUT [sed expressions...]: the text fixture, placeholders filled, as protobuf
encode() {
	local in=$1 out=$2
	shift 2
	sed -e "s/@TIME@/$NOW_NS/g" "$@" "$FX/$in" |
		protoc -I "$PROTO" --encode="$REQ" profiles_service.proto > "$out"
}
post() { # body-file, content-type, response-file, extra curl args
	local body=$1 ct=$2 out=$3
	shift 3
	http_status "$URL/v1development/profiles" "$out" -H "Content-Type: $ct" \
		--data-binary @"$body" "$@"
}
folded() { # selector; frames without names as module+0xoffset (unnamed=addresses)
	curl -s --max-time 30 -G "$URL/api/profile" --data-urlencode "query=$1" \
		--data-urlencode from=now-1h --data-urlencode until=now+5m --data-urlencode format=folded \
		--data-urlencode unnamed=addresses
}
stored_samples() { metric "$URL" hearth_ingested_samples_total; }

# debuginfod serving the debug file of a test binary, found only by its build-id.
debuginfod_start() {
	mkdir -p "$T/srv" "$T/cache"
	cp "$W/inlined.debug" "$T/srv/"
	objcopy --strip-all "$W/inlined" "$T/srv/inlined" # the executable, found by build-id
	for _ in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 12000))
		timeout 120 debuginfod -p "$port" -d "$T/db.sqlite" -F "$T/srv" -t 1 -g 0 > "$T/srv.log" 2>&1 &
		BG_PIDS+=($!)
		DURL=http://127.0.0.1:$port
		for _ in $(seq 100); do
			curl -sf -o /dev/null "$DURL/buildid/$BID/debuginfo" &&
				curl -sf -o /dev/null "$DURL/buildid/$BID/executable" && return 0
			grep -q "Address already in use" "$T/srv.log" && break
			sleep 0.2
		done
	done
	return 1
}
BID=$(readelf -n "$W/inlined" | awk '/Build ID/ { print $3 }')
have_dbginfod=0
if command -v debuginfod > /dev/null && [ -n "$BID" ] && debuginfod_start; then
	have_dbginfod=1
	export DEBUGINFOD_URLS=$DURL DEBUGINFOD_CACHE_PATH=$T/cache
fi

start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 --max-body-mb 2 &&
	URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }

# Native frames without names: symbolized by build-id from the file itself when it is
# here, else from the executable debuginfod serves, else kept as module+0xoff.
read -r segv sego < <(readelf -lW "$W/inlined" | awk '$1 == "LOAD" && $7 == "R" && $8 == "E" { print $3, $2 }')
sym=$(nm "$W/inlined" | awk '$3 == "inl_hot" { print $1 }')
start=$((0x555555554000)) # where a process would have mapped the segment
addr=$((start + 16#$sym - segv + 4))
native() { # service, mapped file name
	encode native.txtpb "$T/$1.bin" -e "s/@BID@/$BID/;s/@START@/$start/" \
		-e "s/@LIMIT@/$((start + 0x100000))/;s/@OFF@/$((sego))/;s/@ADDR@/$addr/" \
		-e "s|@SVC@|$1|;s|@FILE@|$2|"
	st=$(post "$T/$1.bin" application/x-protobuf "$T/r.$1")
	folded "$1{}" > "$T/$1.folded"
}
native nativelocal "$W/inlined"
if [ "$st" = 200 ] && grep -qE '(^|;)inl_hot[^ ]* 5$' "$T/nativelocal.folded" &&
	grep -qx 'libgone.so+0x1044 4' "$T/nativelocal.folded"; then
	pass "otlp_symbolized_from_local_file: $(tr '\n' '|' < "$T/nativelocal.folded")"
else
	fail otlp_symbolized_from_local_file "status $st $(cat "$T/r.nativelocal"): $(cat "$T/nativelocal.folded")"
fi
if [ $have_dbginfod = 0 ]; then
	skip otlp_symbolized_by_debuginfod "debuginfod is not installed or did not start"
else
	native nativeremote /opt/app/inlined
	if grep -qE '(^|;)inl_hot[^ ]* 5$' "$T/nativeremote.folded"; then
		pass "otlp_symbolized_by_debuginfod: $(grep ' 5$' "$T/nativeremote.folded")"
	else
		fail otlp_symbolized_by_debuginfod "$(cat "$T/nativeremote.folded") $(tail -3 "$T/server.log")"
	fi
fi
# A build-id nowhere to be had, a file of another build-id at its path: module+0xoff.
BID=0123456789abcdef0123456789abcdef01234567 native nativenone "$W/inlined"
if grep -qx 'inlined+0x1254 5' "$T/nativenone.folded"; then
	pass otlp_unknown_build_id_module_offset
else
	fail otlp_unknown_build_id_module_offset "$(cat "$T/nativenone.folded")"
fi

# A mapped name that is a FIFO on the server's host: the request still answers at
# once (no open waits for a writer), the frame kept as module+0xoff.
mkfifo "$T/fifo"
t0=$(date +%s)
BID=0123456789abcdef0123456789abcdef01234567 native nativefifo "$T/fifo"
if [ "$st" = 200 ] && [ $(($(date +%s) - t0)) -lt 20 ] && grep -qx 'fifo+0x1254 5' "$T/nativefifo.folded"; then
	pass otlp_fifo_mapping_answers_at_once
else
	fail otlp_fifo_mapping_answers_at_once "status $st after $(($(date +%s) - t0)) s: $(cat "$T/nativefifo.folded")"
fi

# A mapped name that reaches /proc, /sys or /dev only once made canonical is not
# opened: "/./dev/shm/...", "//dev/shm/..." or a symlink into /dev/shm (an ELF
# there, the server's own executable, its build-id given; /proc/self/maps the
# same way). The frame stays module+0xoff, never the executable's function names.
HBID=$(readelf -n "$HEARTH" | awk '/Build ID/ { print $3 }')
read -r hsegv hsego < <(readelf -lW "$HEARTH" | awk '$1 == "LOAD" && $7 == "R" && $8 == "E" { print $3, $2 }')
hsym=$(nm "$HEARTH" | awk '$3 == "main" { print $1 }')
SHM=$(mktemp -d /dev/shm/hearth-it-XXXXXX)
cp "$HEARTH" "$SHM/hearth"
ln -s "$SHM/hearth" "$T/shmlink"
saved_addr=$addr saved_sego=$sego
addr=$((start + 16#$hsym - hsegv + 4)) sego=$((hsego))
hoff=$(printf '0x%x' $((addr - start + sego)))
i=0
for p in "/.$SHM/hearth" "/$SHM/hearth" "$T/shmlink" /./proc/self/maps; do
	i=$((i + 1))
	BID=$HBID native nativeproc$i "$p"
	if [ "$st" = 200 ] && grep -qx "${p##*/}+$hoff 5" "$T/nativeproc$i.folded"; then
		pass "otlp_virtual_fs_path_not_opened $p: $(grep ' 5$' "$T/nativeproc$i.folded")"
	else
		fail "otlp_virtual_fs_path_not_opened $p" "status $st, want '${p##*/}+$hoff 5': $(tr '\n' '|' < "$T/nativeproc$i.folded")"
	fi
done
addr=$saved_addr sego=$saved_sego
rm -rf "$SHM"
# The same executable named where it is: symbolized (the check refuses no more).
BID=$HBID addr=$((start + 16#$hsym - hsegv + 4)) sego=$((hsego)) native nativeexe "$HEARTH"
if [ "$st" = 200 ] && grep -qE '(^|;)main[^ ]* 5$' "$T/nativeexe.folded"; then
	pass "otlp_real_path_symbolized: $(grep ' 5$' "$T/nativeexe.folded")"
else
	fail otlp_real_path_symbolized "status $st: $(tr '\n' '|' < "$T/nativeexe.folded")"
fi

# Another sample type: not stored, said in partial_success.
encode memory.txtpb "$T/mem.bin"
st=$(post "$T/mem.bin" application/x-protobuf "$T/r.mem")
if [ "$st" = 200 ] && grep -q 'alloc_space/bytes' "$T/r.mem" && [ -z "$(folded 'memapp{}')" ]; then
	pass otlp_other_sample_type_partial_success
else
	fail otlp_other_sample_type_partial_success "status $st $(od -c "$T/r.mem" | head -3)"
fi

# Bad input: 4xx with a message naming the problem, nothing stored.
before=$(stored_samples)
bad() { # name, want-status, want-in-message, body, content-type, curl args...
	local name=$1 want=$2 msg=$3 body=$4 ct=$5
	shift 5
	local st
	st=$(post "$body" "$ct" "$T/r.$name" "$@")
	if [ "$st" = "$want" ] && grep -q "$msg" "$T/r.$name"; then
		pass "otlp_rejects_$name: $st $(head -c 160 "$T/r.$name")"
	else
		fail "otlp_rejects_$name" "status $st (want $want): $(head -c 300 "$T/r.$name")"
	fi
}
encode cpu.txtpb "$T/cpu.bin"
head -c 300 "$T/cpu.bin" > "$T/trunc.bin"
bad truncated 400 'not a valid protobuf' "$T/trunc.bin" application/x-protobuf
protoc -I "$PROTO" --encode=hearth.test.oldprofiles.ExportProfilesServiceRequest old_profiles.proto \
	< "$FX/old_layout.txtpb" > "$T/old.bin"
bad old_layout 400 'opentelemetry-proto v1.10' "$T/old.bin" application/x-protobuf
printf '{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"sampleType":[{"typeStrindex":1}]}]}]}]}' > "$T/old.json"
bad old_layout_json 400 'opentelemetry-proto v1.10' "$T/old.json" application/json
# samples naming a dictionary the request does not have
sed -e "s/@TIME@/$NOW_NS/g" "$FX/cpu.txtpb" | awk '/^dictionary/ { exit } { print }' |
	protoc -I "$PROTO" --encode="$REQ" profiles_service.proto > "$T/nodict.bin"
bad no_dictionary 400 'no dictionary' "$T/nodict.bin" application/x-protobuf
encode cpu.txtpb "$T/badidx.bin" -e 's/stack_index: 2 values: 7/stack_index: 9 values: 7/'
bad bad_stack_index 400 'stack_index 9 is out of range' "$T/badidx.bin" application/x-protobuf
# two resources, the second's time an hour ahead: the first is not stored either
rp=$(awk '/^dictionary/ { exit } !/^#/' "$FX/cpu.txtpb")
{
	sed -e "s/@TIME@/$NOW_NS/g" -e 's/"shop"/"shopfirst"/' <<< "$rp"
	sed -e "s/@TIME@/$((NOW_NS + 3600000000000))/g" <<< "$rp"
	awk '/^dictionary/ { p = 1 } p' "$FX/cpu.txtpb"
} | protoc -I "$PROTO" --encode="$REQ" profiles_service.proto > "$T/future.bin"
bad future_time 400 'profile 1: .*time_unix_nano' "$T/future.bin" application/x-protobuf
if [ -z "$(folded 'shopfirst{}')" ]; then
	pass otlp_rejected_request_stores_no_profile_of_it
else
	fail otlp_rejected_request_stores_no_profile_of_it "$(folded 'shopfirst{}')"
fi
encode cpu.txtpb "$T/negative.bin" -e 's/values: 7/values: -7/'
bad negative_value 400 'sample 1 has a negative value (-7)' "$T/negative.bin" application/x-protobuf
printf '{"resourceProfiles": [' > "$T/trunc.json"
bad truncated_json 400 'not valid JSON' "$T/trunc.json" application/json
# a gzip bomb: 0.5 MiB on the wire, 512 MiB inflated
head -c $((512 << 20)) /dev/zero | gzip -9 -c > "$T/bomb.gz"
bad gzip_bomb 413 'memory budget' "$T/bomb.gz" application/x-protobuf -H 'Content-Encoding: gzip'
head -c $((3 << 20)) /dev/zero > "$T/huge.bin"
bad huge 413 '' "$T/huge.bin" application/x-protobuf
bad content_type 415 'application/x-protobuf' "$T/cpu.bin" text/plain
bad not_gzip 400 'not gzip' "$T/cpu.bin" application/x-protobuf -H 'Content-Encoding: gzip'
after=$(stored_samples)
if [ -n "$before" ] && [ "$before" = "$after" ] && curl -sf -o /dev/null "$URL/healthz"; then
	pass "otlp_bad_input_stores_nothing: $before samples before and after"
else
	fail otlp_bad_input_stores_nothing "samples $before -> $after"
fi
finish
