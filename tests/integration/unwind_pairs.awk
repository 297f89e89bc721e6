# Share of each (leaf <- caller) function pair, highest first: "PCT leaf<-caller".
# mode=folded reads hearth's folded stacks (root;...;leaf COUNT) of deepcfi;
# mode=perf reads `perf script -F comm,ip,sym`. Names are normalized so both
# tools spell them alike: inline markers and __GI_/leading underscores dropped,
# repeated neighbours (an inlined copy above its own function) collapsed.
function norm(s) {
	sub(/ \(inlined\)$/, "", s); sub(/_\[i\]$/, "", s); sub(/^__GI_/, "", s); sub(/^_+/, "", s)
	return s
}
function add(leaf, caller, n) { pairs[leaf "<-" caller] += n; total += n }
mode == "folded" && /^deepcfi;/ {
	n = $NF; line = $0; sub(/ [0-9]+$/, "", line)
	k = split(line, f, ";"); m = 0
	for (i = k; i >= 2; i--) { s = norm(f[i]); if (m == 0 || s != g[m]) g[++m] = s }
	add(g[1], m > 1 ? g[2] : "-", n)
}
mode == "perf" && /^[^ \t]/ { inproc = ($1 == "deepcfi"); m = 0; next }
mode == "perf" && /^[ \t]+[0-9a-f]+ / && inproc {
	s = $0; sub(/^[ \t]+[0-9a-f]+ /, "", s); s = norm(s)
	if (m == 0 || s != g[m]) g[++m] = s
	next
}
mode == "perf" && /^$/ && inproc && m > 0 { add(g[1], m > 1 ? g[2] : "-", 1); m = 0 }
END {
	if (mode == "perf" && inproc && m > 0) add(g[1], m > 1 ? g[2] : "-", 1)
	for (p in pairs) printf "%.1f %s\n", 100 * pairs[p] / total, p | "sort -rn"
}
