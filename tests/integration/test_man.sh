#!/usr/bin/env bash
# Man pages (tools/gen-man.sh, built from --help): one page per command in
# `hearth --help` plus hearth(1); every option a command's --help lists is in its
# page and the page lists no other; man renders each page without a warning. The
# comparison is also run on a page with an option removed, which it must reject.
. "$(dirname "$0")/lib.sh"
M=$T/man/man1
if ! bash "$HEARTH_ROOT/tools/gen-man.sh" "$HEARTH" "$M" > "$T/gen.log" 2>&1; then
	fail gen_man "$(cat "$T/gen.log")"
	finish
fi

# option words of --help: leading words of option lines, up to the first non-option word
help_opts() { # command words...
	"$HEARTH" "$@" --help | awk '/^ +-/ { for (i = 1; i <= NF && $i ~ /^-/; i++) {
		w = $i; sub(/,$/, "", w); print w } }' | sort -u
}
# option words of a page: the bold words of the line after each .TP
page_opts() { # page file
	awk 'prev == ".TP" { while (match($0, /\\fB\\-[^\\]*(\\-[^\\]*)*\\fR/)) {
		w = substr($0, RSTART + 3, RLENGTH - 6); gsub(/\\-/, "-", w); sub(/,$/, "", w); print w
		$0 = substr($0, RSTART + RLENGTH) } } { prev = $0 }' "$1" | grep '^-' | sort -u
}
same_opts() { # page, command words... -> diff on stdout, status 0 when equal
	diff <(help_opts "${@:2}") <(page_opts "$1")
}

commands=$("$HEARTH" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }')
[ "$(wc -w <<<"$commands")" -ge 7 ] || fail command_list "only '$commands' in hearth --help"
for c in "" $commands; do
	page=$M/hearth${c:+-$c}.1
	name=man_${c:-hearth}
	if [ ! -s "$page" ]; then
		fail "$name" "no page $page"
		continue
	fi
	d=$(same_opts "$page" $c)
	st=$?
	n=$(help_opts $c | wc -l)
	if [ $st = 0 ] && [ -z "$d" ] && [ "$n" -ge 2 ]; then
		pass "${name}_same_options ($n)"
	else
		fail "${name}_same_options" "--help (<) vs page (>): $d"
	fi
	warn=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$page" 2>&1 > /dev/null)
	[ -z "$warn" ] && pass "${name}_renders" || fail "${name}_renders" "$warn"
done
# the check rejects a page that lost an option, and one that has an extra
grep -v 'fB\\-\\-interval\\fR' "$M/hearth-agent.1" > "$T/lost.1"
sed 's/\\fB\\-\\-idle\\fR/\\fB\\-\\-idle\\fR, \\fB\\-\\-busy\\fR/' "$M/hearth-agent.1" > "$T/extra.1"
if ! same_opts "$T/lost.1" agent > /dev/null && ! same_opts "$T/extra.1" agent > /dev/null; then
	pass check_catches_drift
else
	fail check_catches_drift "a page without --interval or with --busy passed"
fi
finish
