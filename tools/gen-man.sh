#!/usr/bin/env bash
# Writes the man pages hearth(1) and hearth-COMMAND(1) into DIR from the --help
# text of a built hearth, so the pages cannot drift from the program:
#   tools/gen-man.sh build/hearth build/man/man1
# --help layout it relies on (every command's usage() follows it): a "usage:"
# line, a description, option lines starting with blanks and '-', continuation
# lines indented to the description column, other paragraphs after a blank line.
set -euo pipefail
hearth=$1 dir=$2
mkdir -p "$dir"
version=$("$hearth" --version | awk '{ print $2 }')
commands=$("$hearth" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit }
	on && /^  [a-z]/ { print $1 }')
[ -n "$commands" ] || { echo "gen-man: no commands in '$hearth --help'" >&2; exit 1; }

# roff for one --help text on stdin: $1 page name, $2 one-line summary
to_roff() {
	awk -v name="$1" -v summary="$2" -v version="$version" '
	function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); sub(/^\./, "\\\\\\&.", s)
		sub(/^'"'"'/, "\\\\\\&'"'"'", s); return s }
	function flush() { if (desc != "") { print esc(desc) } desc = "" }
	function spec_roff(s,   out, n, i, w, parts) {
		# "-F, --freq HZ": option words bold, their arguments italic
		n = split(s, parts, / /)
		for (i = 1; i <= n; i++) {
			w = parts[i]
			if (w ~ /^-/) out = out (out == "" ? "" : " ") "\\fB" esc(w) "\\fR"
			else out = out " \\fI" esc(w) "\\fR"
		}
		return out
	}
	{ lines[NR] = $0 }
	END {
		# the description column: the most common indent of continuation lines
		for (i = 1; i <= NR; i++)
			if (match(lines[i], /^        *[^ -]/) && RLENGTH > 8) cnt[RLENGTH - 1]++
		col = 0
		for (c in cnt) if (col == 0 || cnt[c] > cnt[col]) col = c + 0
		upper = toupper(name)
		printf ".TH %s 1 \"\" \"hearth %s\" \"User Commands\"\n", upper, version
		print ".SH NAME"
		print esc(name) " \\- " esc(summary)
		print ".SH SYNOPSIS"
		sub(/^usage: /, "", lines[1])
		print ".B " esc(lines[1])
		print ".SH DESCRIPTION"
		state = "desc"
		for (i = 2; i <= NR; i++) {
			l = lines[i]
			if (l ~ /^ *$/) {
				flush()
				if (state == "opts" || state == "cmds") state = "after"
				print ".PP"
				continue
			}
			if (l ~ /^Commands:/) { print ".SH COMMANDS"; state = "cmds"; continue }
			if (state == "cmds" && l ~ /^  [a-z]/) {
				flush()
				sub(/^ +/, "", l)
				cmd = l; sub(/ .*/, "", cmd)
				desc = l; sub(/^[a-z]+ +/, "", desc)
				print ".TP"
				print "\\fBhearth " cmd "\\fR (\\fBhearth\\-" cmd "\\fR(1))"
				continue
			}
			if (l ~ /^ +-/) {
				flush()
				if (state != "opts") { print ".SH OPTIONS"; state = "opts" }
				sub(/^ +/, "", l)
				ind = length(lines[i]) - length(l)
				if (col > ind && length(lines[i]) > col && substr(lines[i], col, 1) == " ") {
					spec = substr(lines[i], ind + 1, col - ind); desc = substr(lines[i], col + 1)
				} else if (match(l, /  +/)) {
					spec = substr(l, 1, RSTART - 1); desc = substr(l, RSTART + RLENGTH)
				} else { spec = l; desc = "" }
				sub(/ +$/, "", spec); sub(/^ +/, "", desc)
				print ".TP"
				print spec_roff(spec)
				continue
			}
			sub(/^ +/, "", l)
			if (state == "opts" || state == "cmds") { desc = desc (desc == "" ? "" : " ") l; continue }
			desc = l
			flush()
		}
		flush()
		print ".SH FILES"
		print ".TP"
		print "\\fI/etc/hearth/hearth.conf\\fR"
		print "settings for every command, read before the flags (\\fB\\-\\-config\\fR chooses"
		print "another file; see the hearth documentation, docs/config.md)."
		print ".SH SEE ALSO"
		print "\\fBhearth\\fR(1); docs/ in the hearth sources (installed under /usr/share/doc/hearth)."
	}'
}

"$hearth" --help | to_roff hearth "an always-on, system-wide CPU profiler for Linux (eBPF)" \
	> "$dir/hearth.1"
for c in $commands; do
	summary=$("$hearth" --help | awk -v c="$c" '$1 == c { $1 = ""; sub(/^ +/, ""); s = $0
		while ((getline l) > 0 && l ~ /^            /) { sub(/^ +/, "", l); s = s " " l }
		print s; exit }')
	"$hearth" "$c" --help | to_roff "hearth-$c" "$summary" > "$dir/hearth-$c.1"
done
