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
