# Helpers for the ClickHouse backend's tests (sourced after lib.sh and
# server_lib.sh): a private ClickHouse from scripts/clickhouse-local.sh, stopped
# at exit, and answers normalized for comparing two servers.

CH_SCRIPT=$HEARTH_ROOT/scripts/clickhouse-local.sh
CH_DIR=$T/ch

cleanup_ch() {
	bash "$CH_SCRIPT" stop "$CH_DIR" > /dev/null 2>&1
	cleanup_lib
}
trap cleanup_ch EXIT

# Starts one ClickHouse (start) or a two-shard cluster (cluster); CH_URLS holds the URLs.
start_clickhouse() { # start|cluster
	if ! command -v clickhouse-server > /dev/null; then
		fail clickhouse_installed "clickhouse-server is missing: scripts/install-deps.sh --test installs it"
		finish
	fi
	if ! bash "$CH_SCRIPT" "$1" "$CH_DIR" > "$T/ch.out" 2> "$T/ch.err"; then
		fail clickhouse_start "$(cat "$T/ch.err")"
		finish
	fi
	mapfile -t CH_URLS < "$CH_DIR/url"
}

# The HTTP port of a clickhouse:// URL.
ch_port() { # url
	local p=${1#clickhouse://*:}
	echo "${p%%/*}"
}

# SQL on the ClickHouse of a clickhouse:// URL (TSV answer).
ch_sql() { # url, sql
	curl -s --max-time 20 "http://127.0.0.1:$(ch_port "$1")/" --data-binary "$2"
}

# A JSON answer with its order made canonical: object keys sorted, tree children
# and arrays of objects (series, groups, rows) sorted by content: ties in
# totals may list in any order. Arrays of numbers keep theirs.
norm_json() {
	jq -S 'walk(if type == "object" and has("children") then .children |= sort_by(.name)
		elif type == "array" and length > 0 and all(.[]; type == "object")
		then sort_by(tostring) else . end)'
}

# same NAME PATH NORMALIZER: the answers of the servers named in $SERVERS (variables
# holding their URLs, the first the reference) are equal and not empty.
same() {
	local name=$1 path=$2 norm=$3 s
	local ref=${SERVERS%% *} srv bad=""
	for srv in $SERVERS; do
		s=$(http_status "${!srv}$path" "$T/raw.$srv")
		if [ "$s" != 200 ]; then
			fail "same_$name" "$srv answered $s: $(head -c 300 "$T/raw.$srv")"
			return
		fi
		$norm < "$T/raw.$srv" > "$T/ans.$srv"
	done
	for srv in $SERVERS; do
		cmp -s "$T/ans.$ref" "$T/ans.$srv" || bad="$bad $srv: $(diff "$T/ans.$ref" "$T/ans.$srv" | head -6 | tr '\n' ' ')"
	done
	if [ ! -s "$T/ans.$ref" ] || [ "$(head -c 2 "$T/ans.$ref")" = "[]" ]; then
		fail "same_$name" "empty answer: $(head -c 200 "$T/raw.$ref")"
	elif [ -z "$bad" ]; then
		pass "same_$name ($(wc -c < "$T/ans.$ref") bytes)"
	else
		fail "same_$name" "$path differs from $ref's:$bad"
	fi
}
sorted() { sort; }
pprof_top() { # the table go tool pprof prints, without the file name
	cat > "$T/pp.pb.gz"
	go tool pprof -top -nodecount=200 "$T/pp.pb.gz" 2> /dev/null | grep -v '^File:'
}
