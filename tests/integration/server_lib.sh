# Helpers for the server/agent/run integration tests (sourced after lib.sh).
# Servers listen on 127.0.0.1 port 0 (a free port the kernel picks); the URL is
# read from the log line they print, and every process is killed at exit.

# Starts a long-running hearth command logging to FILE; waits for its
# "http://127.0.0.1:PORT" (or https://) line; sets SPID and HURL (no subshell, so the process
# stays a child of the test and lib.sh kills it at exit). Fails after 20 s.
start_hearth() { # logfile, args...
	local log=$1
	shift
	"$HEARTH" "$@" > "$log.out" 2> "$log" &
	local pid=$!
	BG_PIDS+=($pid)
	for _ in $(seq 200); do
		local url
		url=$(grep -oE 'https?://127\.0\.0\.1:[0-9]+' "$log" 2>/dev/null | head -1)
		if [ -n "$url" ]; then
			SPID=$pid HURL=$url
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "start_hearth: no URL from '$*': $(tail -3 "$log")" >&2
	return 1
}

# HTTP status of a request (body into FILE); extra curl args after the file.
http_status() { # url, body-file, curl args...
	local url=$1 out=$2
	shift 2
	curl -s -o "$out" -w '%{http_code}' --max-time 30 "$@" "$url"
}

# Waits until a command succeeds (every 0.5 s), at most N seconds.
wait_until() { # seconds, command...
	local n=$(($1 * 2))
	shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		sleep 0.5
	done
	return 1
}

# A metric's value from Prometheus text at URL/metrics (first match).
metric() { # url, name
	curl -s --max-time 10 "$1/metrics" | awk -v n="$2" '$1 == n { print $2; exit }'
}

# One line of the agent's memory state, for a failure's context: its limit, RSS
# and peak, and what the budget evicted by kind (hearth_memory_* of /metrics).
memory_summary() { # url
	curl -s --max-time 10 "$1/metrics" | awk '
		$1 == "hearth_memory_limit_bytes" { lim = $2 / 1048576 }
		$1 == "hearth_memory_rss_bytes" { rss = $2 / 1048576 }
		$1 == "hearth_memory_peak_rss_bytes" { peak = $2 / 1048576 }
		$1 == "hearth_memory_rss_tightens_total" { tight = $2 }
		$1 ~ /^hearth_memory_evictions_total\{/ && $2 > 0 {
			k = $1; sub(/.*kind="/, "", k); sub(/".*/, "", k); ev = ev " " k "=" $2 }
		END { printf "memory: limit %.0f MiB, rss %.1f MiB, peak %.1f MiB, %d RSS tightens; evictions:%s\n",
			lim, rss, peak, tight, ev == "" ? " none" : ev }'
}
