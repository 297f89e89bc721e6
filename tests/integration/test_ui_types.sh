#!/usr/bin/env bash
# The web UI's profile-type selector in headless Chromium (tests/ui/types_test.mjs)
# against a `hearth server` scraping a real Go program (tests/workloads/gopprof):
# CPU by default; memory in bytes and goroutines as a count when picked.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

UI=$HEARTH_ROOT/tests/ui
OUT=${HEARTH_UI_OUT:-$HEARTH_ROOT/build/test-output/ui}
mkdir -p "$OUT"
for need in node /usr/bin/chromium; do
	command -v "$need" > /dev/null ||
		{ fail ui_prerequisites "$need is missing: run scripts/install-deps.sh --test"; finish; }
done
[ -d "$UI/node_modules/playwright-core" ] ||
	{ fail ui_prerequisites "tests/ui/node_modules is missing: run make test-deps (npm ci in tests/ui)"; finish; }

"$W/gopprof" > "$T/gopprof.out" 2> "$T/gopprof.err" &
BG_PIDS+=($!)
for _ in $(seq 50); do [ -s "$T/gopprof.out" ] && break; sleep 0.1; done
gport=$(head -1 "$T/gopprof.out")
[ -n "$gport" ] || { fail gopprof_started "$(cat "$T/gopprof.err")"; finish; }
cat > "$T/scrape.yaml" <<YAML
scrape_configs:
  - job_name: goapp
    scrape_interval: 2s
    static_configs: [{targets: ['127.0.0.1:$gport']}]
YAML
start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 \
	--scrape-config "$T/scrape.yaml" || { fail server_start "$(cat "$T/server.log")"; finish; }
stored() {
	curl -s "$HURL/api/series?from=now-5m" > "$T/series.json" &&
		grep -q '"process_cpu:' "$T/series.json" && grep -q '"memory:inuse_space' "$T/series.json" &&
		grep -q '"goroutine:' "$T/series.json"
}
wait_until 30 stored || { fail scraped "no CPU, memory and goroutine series: $(cat "$T/series.json")"; finish; }
node "$UI/types_test.mjs" "$HURL" "$OUT" 2> "$T/ui.err"
rc=$?
[ $rc = 0 ] || fail ui_types_script "exit $rc: $(tail -5 "$T/ui.err")"
finish
