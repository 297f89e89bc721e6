#!/usr/bin/env bash
# hearth server serving the web UI and the API additions it needs: every file
# of web/ embedded and served byte-for-byte with its Content-Type, no-cache and
# an ETag (304 on If-None-Match), HEAD; paths escaping the UI refused; unknown
# paths and /api endpoints a JSON 404; --web-dir serving from disk;
# /api/profile?format=svg a valid SVG of the fixture; maxNodes up to 100,000
# and beyond accepted; tree nodes naming their module; big answers gzipped for
# clients that accept it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"

WEB=$HEARTH_ROOT/web
start_hearth "$T/server.log" server --data "$T/data" --listen 127.0.0.1:0 &&
	URL=$HURL || { fail server_start "$(cat "$T/server.log")"; finish; }

# Expected Content-Type of a file name, as a browser needs it.
want_type() {
	case "$1" in
	*.html) echo 'text/html; charset=utf-8' ;;
	*.css) echo 'text/css; charset=utf-8' ;;
	*.js | *.mjs) echo 'text/javascript; charset=utf-8' ;;
	*.json) echo application/json ;;
	*.svg) echo image/svg+xml ;;
	*.png) echo image/png ;;
	*) echo application/octet-stream ;;
	esac
}
header() { # headers-file, name
	awk -v n="$2" 'BEGIN { IGNORECASE = 1 } tolower($0) ~ "^" tolower(n) ":" {
		sub(/^[^:]*: */, ""); sub(/\r$/, ""); print; exit }' "$1"
}

# Every embedded file, byte-for-byte, with its type. (The build embeds web/
# minus dotfiles, *.md notes and web/test/.)
mapfile -t files < <(cd "$WEB" 2>/dev/null && find . -type f ! -name '.*' ! -name '*.md' \
	! -path './test/*' | sed 's|^\.||' | LC_ALL=C sort)
if [ ${#files[@]} -eq 0 ]; then
	fail embedded_files "web/ holds no files to check"
fi
bad=""
for f in "${files[@]}"; do
	st=$(http_status "$URL$f" "$T/body" -D "$T/hdr")
	ct=$(header "$T/hdr" Content-Type)
	cc=$(header "$T/hdr" Cache-Control)
	if [ "$st" != 200 ] || ! cmp -s "$T/body" "$WEB$f" || [ "$ct" != "$(want_type "$f")" ] ||
		[ "$cc" != no-cache ]; then
		bad+=" $f(status $st, type '$ct', cache '$cc')"
	fi
done
[ -z "$bad" ] && [ ${#files[@]} -gt 0 ] && pass "embedded_files_served (${#files[@]} files)" ||
	fail embedded_files_served "$bad"

# / is index.html.
st=$(http_status "$URL/" "$T/index" -D "$T/hdr.index")
if [ "$st" = 200 ] && cmp -s "$T/index" "$WEB/index.html" &&
	[ "$(header "$T/hdr.index" Content-Type)" = 'text/html; charset=utf-8' ]; then
	pass root_is_index_html
else
	fail root_is_index_html "status $st, $(header "$T/hdr.index" Content-Type)"
fi
# The page may load only its own files and talk only to this server.
csp=$(header "$T/hdr.index" Content-Security-Policy)
[[ "$csp" == "default-src 'self';"* ]] && [[ "$csp" == *"frame-ancestors 'none'"* ]] &&
	pass content_security_policy || fail content_security_policy "'$csp'"

# HEAD: headers with the length, no body.
curl -s -I --max-time 10 "$URL/" -o "$T/head" -w '%{http_code} %{size_download}' > "$T/head.st"
len=$(header "$T/head" Content-Length)
if [ "$(cat "$T/head.st")" = "200 0" ] && [ "$len" = "$(stat -c %s "$WEB/index.html")" ]; then
	pass head_index
else
	fail head_index "$(cat "$T/head.st"), Content-Length '$len'"
fi

# ETag: a revalidation of an unchanged file is a 304 with no body.
etag=$(header "$T/hdr.index" ETag)
st=$(http_status "$URL/" "$T/again" -H "If-None-Match: $etag")
st2=$(http_status "$URL/" "$T/again2" -H 'If-None-Match: "other"')
if [ -n "$etag" ] && [ "$st" = 304 ] && [ ! -s "$T/again" ] && [ "$st2" = 200 ]; then
	pass etag_revalidation
else
	fail etag_revalidation "etag '$etag': status $st / $st2"
fi

# Paths that would leave the UI, in every spelling: 400 JSON, nothing served.
for p in '/../etc/passwd' '/js/../../etc/passwd' '/%2e%2e/etc/passwd' '/.%2e/x' '/./index.html' \
	'//etc/passwd'; do
	st=$(http_status "$URL$p" "$T/esc" --path-as-is)
	if [ "$st" = 400 ] && grep -q '"error": "path .* is not allowed' "$T/esc"; then
		pass "escape_refused $p"
	else
		fail "escape_refused $p" "status $st: $(head -c 200 "$T/esc")"
	fi
done

# Unknown files and API endpoints: JSON 404 naming the path; other methods 405.
for p in /nope.js /js/ /api/nope /api; do
	st=$(http_status "$URL$p" "$T/nf" -D "$T/hdr.nf")
	if [ "$st" = 404 ] && [ "$(header "$T/hdr.nf" Content-Type)" = application/json ] &&
		grep -q "no such endpoint '$p'" "$T/nf"; then
		pass "unknown_path_404 $p"
	else
		fail "unknown_path_404 $p" "status $st: $(cat "$T/nf")"
	fi
done
st=$(http_status "$URL/index.html" "$T/post" -X POST --data x)
[ "$st" = 405 ] && grep -q 'takes GET or HEAD' "$T/post" && pass static_post_405 ||
	fail static_post_405 "status $st: $(cat "$T/post")"

# The fixture: main;work;hot 70, main;work;cold 25, main;idle 5.
NOW=$(date +%s)
printf 'main;work;hot 70\nmain;work;cold 25\nmain;idle 5\n' |
	curl -s -o "$T/ing" --data-binary @- "$URL/ingest?name=webapp&from=$((NOW - 60))&until=$((NOW - 50))"
Q="query=webapp%7B%7D&from=$((NOW - 120))&until=$NOW"

# SVG: valid XML, the fixture's frames by name, the right type.
st=$(http_status "$URL/api/profile?format=svg&$Q" "$T/p.svg" -D "$T/hdr.svg")
names=$(grep -oE 'data-name="[^"]*"' "$T/p.svg" | sort -u | tr '\n' ' ')
if [ "$st" = 200 ] && [ "$(header "$T/hdr.svg" Content-Type)" = image/svg+xml ] &&
	xmllint --noout "$T/p.svg" 2> "$T/xmllint" &&
	for n in main work hot cold idle; do grep -q "data-name=\"$n\"" "$T/p.svg" || exit 1; done; then
	pass "svg_profile ($names)"
else
	fail svg_profile "status $st, names: $names $(head -c 300 "$T/xmllint")"
fi
st=$(http_status "$URL/api/profile?format=xml&$Q" "$T/xml")
[ "$st" = 400 ] && grep -q "unknown format 'xml' (pprof, folded, svg, tree, top, topjson)" "$T/xml" &&
	pass unknown_format_lists_svg || fail unknown_format_lists_svg "status $st: $(cat "$T/xml")"

# topjson: the web UI's top table, the text top's rows (self = pprof's flat) as JSON.
st=$(http_status "$URL/api/profile?format=topjson&$Q" "$T/top.json" -D "$T/hdr.top")
rows=$(jq -c '[.total, (.rows[] | [.name, .self, .total])]' "$T/top.json" 2>/dev/null)
want='[100,["hot",70,70],["cold",25,25],["idle",5,5],["main",0,100],["work",0,95]]'
[ "$st" = 200 ] && [ "$(header "$T/hdr.top" Content-Type)" = application/json ] &&
	[ "$rows" = "$want" ] && pass "topjson_rows" ||
	fail topjson_rows "status $st: $rows $(head -c 300 "$T/top.json")"
# The tree answer carries the same table when asked (topRows: the web UI's one request).
st=$(http_status "$URL/api/profile?format=tree&topRows=2&$Q" "$T/treetop.json")
top=$(jq -c '[.total, .tree.total, (.top.rows[] | [.name, .self, .total])]' "$T/treetop.json" 2>/dev/null)
[ "$st" = 200 ] && [ "$top" = '[100,100,["hot",70,70],["cold",25,25]]' ] && pass tree_with_top_rows ||
	fail tree_with_top_rows "status $st: $top $(head -c 300 "$T/treetop.json")"
st=$(http_status "$URL/api/profile?format=tree&topRows=0&$Q" "$T/tr0")
[ "$st" = 400 ] && grep -q "topRows '0' is not a number from 1 to 262144" "$T/tr0" &&
	pass top_rows_0_refused || fail top_rows_0_refused "status $st: $(cat "$T/tr0")"

# maxNodes: the UI asks for 100,000; over the ceiling is a 400 naming it.
st=$(http_status "$URL/api/profile?format=tree&maxNodes=100000&$Q" "$T/tree100k")
total=$(jq -r '.total' "$T/tree100k" 2>/dev/null)
[ "$st" = 200 ] && [ "$total" = 100 ] && pass "max_nodes_100000_accepted" ||
	fail max_nodes_100000_accepted "status $st: $(head -c 300 "$T/tree100k")"
for v in 1000000 0 12x; do
	st=$(http_status "$URL/api/profile?format=tree&maxNodes=$v&$Q" "$T/mn")
	[ "$st" = 400 ] && grep -q "maxNodes '$v' is not a number from 1 to" "$T/mn" &&
		pass "max_nodes_bad $v" || fail "max_nodes_bad $v" "status $st: $(cat "$T/mn")"
done
st=$(http_status "$URL/api/diff?left=webapp%7B%7D&right=webapp%7B%7D&leftfrom=$((NOW - 120))&rightfrom=$((NOW - 120))&maxNodes=100000" "$T/diff")
[ "$st" = 200 ] && [ "$(jq -r '.left' "$T/diff")" = 100 ] && pass diff_max_nodes_100000 ||
	fail diff_max_nodes_100000 "status $st: $(head -c 300 "$T/diff")"

# gzip: a big answer (the tree of 30,000 distinct stacks) is gzipped for a client
# that accepts it, and is the same JSON once inflated; small answers, clients
# that do not ask, and "gzip;q=0" get it plain.
awk 'BEGIN { for (i = 0; i < 30000; i++) printf "main;mod%d;fn%d;leaf%d %d\n", i % 50, i, i % 7, 1 + i % 13 }' |
	curl -s -o /dev/null --data-binary @- "$URL/ingest?name=bigapp&from=$((NOW - 60))&until=$((NOW - 50))"
BIG="$URL/api/profile?format=tree&maxNodes=100000&query=bigapp%7B%7D&from=$((NOW - 120))&until=$NOW"
curl -s -D "$T/h.plain" -o "$T/big.plain" -w '%{size_download}' "$BIG" > "$T/n.plain"
curl -s --compressed -D "$T/h.gz" -o "$T/big.gz" -w '%{size_download}' "$BIG" > "$T/n.gz"
curl -s -H 'Accept-Encoding: gzip;q=0' -D "$T/h.q0" -o /dev/null "$BIG"
curl -s --compressed -D "$T/h.small" -o /dev/null "$URL/api/profile?format=tree&$Q"
plain=$(cat "$T/n.plain") gz=$(cat "$T/n.gz")
if [ "$(header "$T/h.gz" Content-Encoding)" = gzip ] && cmp -s "$T/big.plain" "$T/big.gz" &&
	[ "$plain" -gt 262144 ] && [ $((gz * 3)) -lt "$plain" ] &&
	[ -z "$(header "$T/h.plain" Content-Encoding)" ] && [ -z "$(header "$T/h.q0" Content-Encoding)" ] &&
	[ -z "$(header "$T/h.small" Content-Encoding)" ] && jq -e '.total > 0' "$T/big.gz" > /dev/null; then
	pass "gzip_big_answers ($plain bytes sent as $gz)"
else
	fail gzip_big_answers "plain $plain, gzip $gz; encodings '$(header "$T/h.gz" Content-Encoding)' '$(header "$T/h.plain" Content-Encoding)' '$(header "$T/h.q0" Content-Encoding)' '$(header "$T/h.small" Content-Encoding)'"
fi

# Modules: a pprof with mappings (a real Go CPU profile) names each frame's binary.
GOPROF=$HEARTH_ROOT/tests/fuzz/corpus/fuzz_pprof/go_cpu.pb.gz
curl -s -o /dev/null --data-binary @"$GOPROF" \
	"$URL/ingest?name=goweb&format=pprof&from=$((NOW - 60))&until=$((NOW - 50))"
curl -s -o "$T/gotree" "$URL/api/profile?format=tree&query=goweb%7B%7D&from=$((NOW - 120))&until=$NOW"
mods=$(jq -r '[.. | objects | .module? // empty] | unique | join(",")' "$T/gotree" 2>/dev/null)
nomod=$(jq -r '.tree | has("module")' "$T/gotree" 2>/dev/null)
if [ -n "$mods" ] && [ "$nomod" = false ] && ! grep -q '/' <<< "$mods"; then
	pass "tree_modules ($mods)"
else
	fail tree_modules "modules '$mods', root has module: $nomod"
fi
# Text profiles have no mappings: no module key at all.
if ! grep -q '"module"' "$T/tree100k"; then
	pass tree_no_module_when_unknown
else
	fail tree_no_module_when_unknown "$(head -c 300 "$T/tree100k")"
fi

# --web-dir: files from disk (edited without a rebuild), same rules.
mkdir -p "$T/web/img" "$T/web/sub.dir"
printf '<!doctype html><title>dev</title>\n' > "$T/web/index.html"
printf '<svg xmlns="http://www.w3.org/2000/svg"/>\n' > "$T/web/img/logo.svg"
printf '\x89PNG\r\n\x1a\n' > "$T/web/img/x.png"
start_hearth "$T/dev.log" server --data "$T/data2" --listen 127.0.0.1:0 --web-dir "$T/web" &&
	DEV=$HURL || fail dev_server_start "$(cat "$T/dev.log")"
if [ -n "${DEV:-}" ]; then
	ok=1
	for f in /index.html /img/logo.svg /img/x.png; do
		st=$(http_status "$DEV$f" "$T/dev.body" -D "$T/dev.hdr")
		{ [ "$st" = 200 ] && cmp -s "$T/dev.body" "$T/web$f" &&
			[ "$(header "$T/dev.hdr" Content-Type)" = "$(want_type "$f")" ]; } || ok=0
	done
	printf '<!doctype html><title>edited</title>\n' > "$T/web/index.html"
	curl -s "$DEV/" | grep -q edited || ok=0
	[ $ok = 1 ] && pass web_dir_serves_disk || fail web_dir_serves_disk "$(cat "$T/dev.body")"
	st1=$(http_status "$DEV/sub.dir" "$T/d1")
	st2=$(http_status "$DEV/img/../index.html" "$T/d2" --path-as-is)
	st3=$(http_status "$DEV/nope.html" "$T/d3")
	[ "$st1$st2$st3" = 404400404 ] && pass web_dir_dir_escape_missing ||
		fail web_dir_dir_escape_missing "$st1 $st2 $st3: $(cat "$T/d1" "$T/d2" "$T/d3")"
	# A FIFO (or socket, device) under --web-dir is no page: 404 at once, where an
	# open waiting for a writer held the request and then SIGTERM's shutdown.
	mkfifo "$T/web/pipe.html"
	t0=$(date +%s)
	st=$(http_status "$DEV/pipe.html" "$T/d4" --max-time 5)
	st_after=$(http_status "$DEV/index.html" "$T/d5" --max-time 5)
	kill -TERM "$SPID"
	gone() { ! kill -0 "$SPID" 2> /dev/null; }
	if [ "$st" = 404 ] && [ "$st_after" = 200 ] && wait_until 10 gone; then
		pass "web_dir_fifo_not_served: 404, then SIGTERM ends the server ($(($(date +%s) - t0)) s in all)"
	else
		fail web_dir_fifo_not_served "status $st (want 404), then $st_after; server gone after SIGTERM: $(gone && echo yes || echo no)"
	fi
fi
"$HEARTH" server --data "$T/data3" --web-dir "$T/no-such-dir" > /dev/null 2> "$T/wd.err"
rc=$?
[ $rc = 2 ] && grep -q "web-dir: '$T/no-such-dir' is not a directory" "$T/wd.err" &&
	pass web_dir_missing_usage_error || fail web_dir_missing_usage_error "rc $rc: $(cat "$T/wd.err")"
# The generator: an empty or missing web/ still builds (an empty table); a file
# name that cannot go into a C string or a URL is refused with its name.
EMBED=$HEARTH_ROOT/build/tools/embed
if [ -x "$EMBED" ]; then
	"$EMBED" "$T/empty.c" "$T/no-such-web" 2> "$T/embed.err" &&
		cc -std=c11 -Wall -Wextra -Werror -I"$HEARTH_ROOT/src" -c "$T/empty.c" -o "$T/empty.o" 2>> "$T/embed.err" &&
		grep -q 'web_n_files = 0;' "$T/empty.c" && pass embed_empty_web_dir ||
		fail embed_empty_web_dir "$(cat "$T/embed.err")"
	mkdir -p "$T/w"
	printf x > "$T/w/bad\"name.js"
	"$EMBED" "$T/bad.c" "$T/w" "$T/w/bad\"name.js" 2> "$T/embed.err"
	rc=$?
	[ $rc = 2 ] && grep -q 'use only letters, digits' "$T/embed.err" && [ ! -e "$T/bad.c" ] &&
		pass embed_refuses_odd_names || fail embed_refuses_odd_names "rc $rc: $(cat "$T/embed.err")"
else
	fail embed_tool "no $EMBED (make builds it)"
fi
"$HEARTH" server --help | grep -q -- '--web-dir DIR' && pass help_lists_web_dir ||
	fail help_lists_web_dir "not in hearth server --help"
"$HEARTH" run --help | grep -q -- '--web-dir DIR' && pass run_help_lists_web_dir ||
	fail run_help_lists_web_dir "not in hearth run --help"
finish
