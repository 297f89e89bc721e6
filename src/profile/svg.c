/*
 * A standalone SVG flame graph: open the file in a browser and click to zoom,
 * search with a regular expression, hover for details. The picture follows
 * flamegraph.pl's conventions (root "all" at the bottom, children sorted by name,
 * a frame's width its share of samples) but is our own code.
 *
 * Samples merge into a tree of frames keyed by (parent, name): a stack is the
 * "process" label, then its locations root first, each expanded into its lines
 * (the real function, then the callees inlined into it) — the same frames the
 * folded writer prints. Widths come from values[0] (samples), or cpu ns when the
 * profile has no counts.
 *
 * Every frame is a <g class="f"> carrying its full name and geometry in data-*
 * attributes (data-name, data-s start, data-v value, data-d depth, all in value
 * units), so the script can zoom without parsing titles and tests can find frames
 * through the DOM. A graph taller than the window opens scrolled to its bottom, where
 * the roots are. Names come from outside (decoded profiles), so all text is
 * XML-escaped and invalid UTF-8 or control characters become '?'.
 */
#include "profile_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SVG_WIDTH	1200
#define SVG_XPAD	10
#define SVG_FRAME_H	16
#define SVG_FONT	12
#define SVG_CHAR_W	0.59 /* average glyph width / font size (flamegraph.pl's figure) */
#define SVG_YPAD_TOP	(SVG_FONT * 3)
#define SVG_YPAD_BOTTOM (SVG_FONT * 2 + 10)
/*
 * Frames narrower than this many pixels are not drawn: in huge profiles they are
 * most of the file yet invisible. Their samples still count in their ancestors'
 * widths (and zooming into an ancestor shows nothing for them, as flamegraph.pl).
 */
#define SVG_MIN_PX 0.1

/* Kinds beyond enum profile_frame_kind: the root and the process frames. */
#define SVG_KIND_ROOT	 100
#define SVG_KIND_PROCESS 101

struct svg_node {
	size_t parent; /* SIZE_MAX for the root */
	int64_t name;  /* id in svg.names */
	int kind;      /* enum profile_frame_kind or SVG_KIND_* */
	size_t depth;
	int64_t value, start; /* start: offset from the left edge, in value units */
};

struct svg {
	const struct profile *p;
	int vi; /* sample value index sizing frames */
	struct base_strtab names;
	struct svg_node *nodes; /* [0] is the root "all" */
	size_t n, cap;
	struct base_hmap children; /* (parent, name) -> node */
};

/* ---- the tree ---- */

struct child_key {
	size_t parent;
	int64_t name;
};

static bool child_eq(const void *ctx, size_t idx, const void *key)
{
	const struct svg_node *n = &((const struct svg *)ctx)->nodes[idx];
	const struct child_key *k = key;

	return n->parent == k->parent && n->name == k->name;
}

/* The child of parent called name, created when new; SIZE_MAX on ENOMEM. */
static size_t child_of(struct svg *s, size_t parent, const char *name, int kind)
{
	struct child_key k = {parent, base_strtab__intern(&s->names, name)};
	uint64_t hash;
	size_t i;

	if (k.name < 0)
		return SIZE_MAX;
	hash = base_hash_u64(base_hash_u64(BASE_HASH_SEED, parent), (uint64_t)k.name);
	i = base_hmap__find(&s->children, hash, child_eq, s, &k);
	if (i != SIZE_MAX)
		return i;
	if (base_grow((void **)&s->nodes, &s->cap, s->n + 1, sizeof(*s->nodes)) ||
	    base_hmap__insert(&s->children, hash, s->n))
		return SIZE_MAX;
	s->nodes[s->n] =
	    (struct svg_node){.parent = parent,
			      .name = k.name,
			      .kind = kind,
			      .depth = parent == SIZE_MAX ? 0 : s->nodes[parent].depth + 1};
	return s->n++;
}

/* Walks one step down from *node and adds v there; false on ENOMEM. */
static bool descend(struct svg *s, size_t *node, const char *name, int kind, int64_t v)
{
	size_t c = child_of(s, *node, name, kind);

	if (c == SIZE_MAX)
		return false;
	s->nodes[c].value = base_sat_add(s->nodes[c].value, v);
	*node = c;
	return true;
}

static int add_sample(struct svg *s, const struct profile_sample *ps)
{
	int64_t v = ps->values[s->vi];
	char name[PROFILE_NAME_MAX];
	struct profile_location loc;
	size_t node = 0;

	if (v <= 0) /* a width cannot be negative */
		return 0;
	s->nodes[0].value = base_sat_add(s->nodes[0].value, v);
	for (size_t i = 0; i < ps->n_labels; i++)
		if (ps->labels[i].str && strcmp(ps->labels[i].key, PROFILE_LABEL_PROCESS) == 0 &&
		    !descend(s, &node, ps->labels[i].str, SVG_KIND_PROCESS, v))
			return -ENOMEM;
	for (size_t i = ps->n_locs; i-- > 0;) {
		if (profile__get_location(s->p, ps->locs[i], &loc))
			continue;
		for (size_t l = loc.n_lines ? loc.n_lines : 1; l-- > 0;) {
			profile__frame_name(s->p, &loc, l, name, sizeof(name));
			if (!descend(s, &node, name, profile__frame_kind(s->p, &loc, l), v))
				return -ENOMEM;
		}
	}
	return 0;
}

static int build_tree(struct svg *s)
{
	struct profile_sample ps;
	int err = base_strtab__init(&s->names);

	s->vi = profile__total(s->p, 0) > 0 ? 0 : 1;
	if (!err && child_of(s, SIZE_MAX, "all", SVG_KIND_ROOT) != 0)
		err = -ENOMEM;
	for (size_t i = 0; i < profile__n_samples(s->p) && !err; i++)
		if (profile__sample(s->p, i, &ps) == 0)
			err = add_sample(s, &ps);
	return err;
}

/* ---- layout: children left to right by name, as flamegraph.pl ---- */

struct order_item {
	size_t parent, node;
	const char *name;
};

static int order_cmp(const void *va, const void *vb)
{
	const struct order_item *a = va, *b = vb;

	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	return strcmp(a->name, b->name);
}

/*
 * Sets every node's start. Sorting all non-root nodes by (parent, name) lists each
 * parent's children together, and a parent always has a smaller index than its
 * children, so its start is known before its group comes up: no recursion, which
 * matters for the deep stacks a decoded profile may hold.
 */
static int layout(struct svg *s)
{
	struct order_item *items = calloc(s->n, sizeof(*items));
	size_t m = 0;

	if (!items)
		return -ENOMEM;
	for (size_t i = 1; i < s->n; i++)
		items[m++] =
		    (struct order_item){s->nodes[i].parent, i, s->names.strs[s->nodes[i].name]};
	qsort(items, m, sizeof(*items), order_cmp);
	for (size_t i = 0; i < m;) {
		size_t parent = items[i].parent;
		int64_t off = s->nodes[parent].start;

		for (; i < m && items[i].parent == parent; i++) {
			s->nodes[items[i].node].start = off;
			off = base_sat_add(off, s->nodes[items[i].node].value);
		}
	}
	free(items);
	return 0;
}

/* ---- text ---- */

/* Length of the valid UTF-8 sequence (RFC 3629) at s, 0 when invalid. Also 0 for
 * U+FFFE and U+FFFF, which XML 1.0 does not allow. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	if (len == 3 && s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
		return 0;
	return len;
}

/* Appends at most max_chars characters of s escaped for XML text and attributes. */
static void xml_append(struct base_sbuf *b, const char *str, size_t max_chars)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), chars = 0;

	for (size_t i = 0; i < n && chars < max_chars; chars++) {
		size_t len = utf8_len(s + i, n - i);

		if (len > 1)
			base_sbuf__append(b, (const char *)s + i, len);
		else if (len == 0 || (s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			base_sbuf__puts(b, "?");
		else if (s[i] == '&')
			base_sbuf__puts(b, "&amp;");
		else if (s[i] == '<')
			base_sbuf__puts(b, "&lt;");
		else if (s[i] == '>')
			base_sbuf__puts(b, "&gt;");
		else if (s[i] == '"')
			base_sbuf__puts(b, "&quot;");
		else if (s[i] == '\'')
			base_sbuf__puts(b, "&apos;");
		else
			base_sbuf__append(b, (const char *)s + i, 1);
		i += len ? len : 1;
	}
}

static size_t utf8_chars(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), chars = 0;

	for (size_t i = 0; i < n; chars++) {
		size_t len = utf8_len(s + i, n - i);

		i += len ? len : 1;
	}
	return chars;
}

/* The label of a frame w pixels wide: the name, or its start and "..", or nothing. */
static void append_fitted(struct base_sbuf *b, const char *name, double w)
{
	double fit = (w - 6) / (SVG_FONT * SVG_CHAR_W);
	size_t chars;

	if (fit < 3)
		return;
	chars = (size_t)fit;
	if (utf8_chars(name) <= chars) {
		xml_append(b, name, SIZE_MAX);
	} else {
		xml_append(b, name, chars - 2);
		base_sbuf__puts(b, "..");
	}
}

/* ---- colours: a hue family per kind, the shade a hash of the name ---- */

static void frame_fill(int kind, const char *name, char *buf, size_t len)
{
	uint64_t h = base_hash_bytes(BASE_HASH_SEED, name, strlen(name));
	double v1 = (double)(h & 0xff) / 255, v2 = (double)((h >> 8) & 0xff) / 255;
	double v3 = (double)((h >> 16) & 0xff) / 255;
	int r, g, b;

	switch (kind) {
	case PROFILE_FRAME_KERNEL: /* blues */
		r = 50 + (int)(60 * v1), g = 120 + (int)(70 * v2), b = 200 + (int)(55 * v3);
		break;
	case PROFILE_FRAME_INLINE: /* the user palette's yellow end */
		r = 225 + (int)(30 * v1), g = 170 + (int)(60 * v2), b = 40 + (int)(50 * v3);
		break;
	case PROFILE_FRAME_UNKNOWN: /* greys */
		r = g = b = 160 + (int)(40 * v1);
		break;
	case SVG_KIND_PROCESS: /* greens */
		r = 60 + (int)(50 * v1), g = 170 + (int)(50 * v2), b = 60 + (int)(50 * v3);
		break;
	case SVG_KIND_ROOT:
		r = g = b = 200;
		break;
	default: /* user code: flamegraph.pl's "hot" reds to oranges */
		r = 205 + (int)(50 * v3), g = (int)(230 * v1), b = (int)(55 * v2);
	}
	snprintf(buf, len, "rgb(%d,%d,%d)", r, g, b);
}

/* ---- the document ---- */

static const char svg_style[] =
    "<style type=\"text/css\">\n"
    "text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
    "#title { font-size: 17px; text-anchor: middle; }\n"
    "#search, #matched { text-anchor: end; }\n"
    "#search, #unzoom { cursor: pointer; }\n"
    "#unzoom.hide { display: none; }\n"
    "g.f { cursor: pointer; }\n"
    "g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
    "g.f.parent { opacity: 0.5; }\n"
    "</style>\n";

/*
 * Kept in step with SVG_FONT and SVG_CHAR_W above.
 * Zoom: the clicked frame fills the width, its descendants scale with it, its
 * ancestors stay (dimmed, full width), everything else hides. Search: a regular
 * expression over full names; matches turn magenta and "Matched:" gives the share
 * of the view they cover (overlapping matches, e.g. recursion, count once).
 * Geometry comes from the data-* attributes, in value units.
 */
static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "\"use strict\";\n"
    "var frames = [], details, matched, searchbtn, unzoombtn;\n"
    "var total = 1, X0 = 0, FW = 1, zoomed = null, term = null;\n"
    "var FONT = 12, CHARW = 0.59, HIT = \"rgb(230,0,230)\";\n"
    "function num(g, k) { return parseFloat(g.getAttribute(\"data-\" + k)); }\n"
    "function init(evt) {\n"
    "  var svg = document.documentElement;\n"
    "  total = num(svg, \"total\"); X0 = num(svg, \"x0\"); FW = num(svg, \"fw\");\n"
    "  details = document.getElementById(\"details\");\n"
    "  matched = document.getElementById(\"matched\");\n"
    "  searchbtn = document.getElementById(\"search\");\n"
    "  unzoombtn = document.getElementById(\"unzoom\");\n"
    "  frames = Array.prototype.slice.call(document.querySelectorAll(\"g.f\"));\n"
    "  frames.forEach(function (g) {\n"
    "    g.addEventListener(\"click\", function () { zoom(g); });\n"
    "    g.addEventListener(\"mouseover\", function () {\n"
    "      details.textContent = g.querySelector(\"title\").textContent; });\n"
    "    g.addEventListener(\"mouseout\", function () { details.textContent = \" \"; });\n"
    "  });\n"
    "  unzoombtn.addEventListener(\"click\", unzoom);\n"
    "  searchbtn.addEventListener(\"click\", searchPrompt);\n"
    "  window.addEventListener(\"keydown\", function (e) {\n"
    "    if (e.key === \"F3\" || ((e.ctrlKey || e.metaKey) && e.key === \"f\")) {\n"
    "      e.preventDefault(); searchPrompt(); }\n"
    "  });\n"
    "  /* links can carry a view: ?f=FRAME zooms to the first frame so named, ?s=REGEX searches "
    "*/\n"
    "  var q = new URLSearchParams(window.location.search), z = q.get(\"f\"), s = q.get(\"s\");\n"
    "  if (z) frames.some(function (g) { return g.getAttribute(\"data-name\") === z && (zoom(g), "
    "true); });\n"
    "  if (s) search(s);\n"
    "  /* the roots are at the bottom: a graph taller than the window opens scrolled to "
    "them */\n"
    "  window.scrollTo(0, document.documentElement.getBoundingClientRect().height);\n"
    "}\n"
    "function fit(g, w) {\n"
    "  var t = g.querySelector(\"text\"), name = g.getAttribute(\"data-name\");\n"
    "  var n = Math.floor((w - 6) / (FONT * CHARW)), chars = Array.from(name);\n"
    "  if (n < 3) t.textContent = \"\";\n"
    "  else if (chars.length <= n) t.textContent = name;\n"
    "  else t.textContent = chars.slice(0, n - 2).join(\"\") + \"..\";\n"
    "}\n"
    "function place(g, x, w) {\n"
    "  var r = g.querySelector(\"rect\"), t = g.querySelector(\"text\");\n"
    "  r.setAttribute(\"x\", x.toFixed(2)); r.setAttribute(\"width\", w.toFixed(2));\n"
    "  t.setAttribute(\"x\", (x + 3).toFixed(2)); fit(g, w);\n"
    "}\n"
    "function inside(f, g) {\n"
    "  var s = num(f, \"s\"), v = num(f, \"v\"), s0 = num(g, \"s\"), v0 = num(g, \"v\");\n"
    "  return num(f, \"d\") >= num(g, \"d\") && s >= s0 && s + v <= s0 + v0;\n"
    "}\n"
    "function above(f, g) {\n"
    "  var s = num(f, \"s\"), v = num(f, \"v\"), s0 = num(g, \"s\"), v0 = num(g, \"v\");\n"
    "  return num(f, \"d\") < num(g, \"d\") && s <= s0 && s + v >= s0 + v0;\n"
    "}\n"
    "function zoom(g) {\n"
    "  var s0 = num(g, \"s\"), v0 = num(g, \"v\");\n"
    "  frames.forEach(function (f) {\n"
    "    var w = num(f, \"v\") / v0 * FW;\n"
    "    f.classList.remove(\"parent\"); f.style.display = \"\";\n"
    "    if (above(f, g)) { f.classList.add(\"parent\"); place(f, X0, FW); }\n"
    "    else if (inside(f, g) && w >= 0.1) place(f, X0 + (num(f, \"s\") - s0) / v0 * FW, w);\n"
    "    else f.style.display = \"none\";\n"
    "  });\n"
    "  zoomed = g; unzoombtn.classList.remove(\"hide\");\n"
    "  if (term !== null) search(term);\n"
    "}\n"
    "function unzoom() {\n"
    "  frames.forEach(function (f) {\n"
    "    f.classList.remove(\"parent\"); f.style.display = \"\";\n"
    "    place(f, X0 + num(f, \"s\") / total * FW, num(f, \"v\") / total * FW);\n"
    "  });\n"
    "  zoomed = null; unzoombtn.classList.add(\"hide\");\n"
    "  if (term !== null) search(term);\n"
    "}\n"
    "function searchPrompt() {\n"
    "  if (term !== null) { resetSearch(); return; }\n"
    "  var t = window.prompt(\"Search for (regular expression):\", \"\");\n"
    "  if (t) search(t);\n"
    "}\n"
    "function resetSearch() {\n"
    "  frames.forEach(function (f) {\n"
    "    var r = f.querySelector(\"rect\"); r.setAttribute(\"fill\", "
    "r.getAttribute(\"data-fill\"));\n"
    "  });\n"
    "  term = null; matched.textContent = \" \"; searchbtn.textContent = \"Search\";\n"
    "}\n"
    "function search(t) {\n"
    "  var re, spans = [], sum = 0, end = -Infinity;\n"
    "  try { re = new RegExp(t); } catch (e) { window.alert(\"Bad regular expression: \" + "
    "e.message); return; }\n"
    "  term = t;\n"
    "  frames.forEach(function (f) {\n"
    "    var r = f.querySelector(\"rect\"), hit = re.test(f.getAttribute(\"data-name\"));\n"
    "    r.setAttribute(\"fill\", hit ? HIT : r.getAttribute(\"data-fill\"));\n"
    "    if (hit && (zoomed === null || inside(f, zoomed)))\n"
    "      spans.push([num(f, \"s\"), num(f, \"s\") + num(f, \"v\")]);\n"
    "  });\n"
    "  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
    "  spans.forEach(function (sp) {\n"
    "    if (sp[1] > end) { sum += sp[1] - Math.max(sp[0], end); end = sp[1]; }\n"
    "  });\n"
    "  var base = zoomed === null ? total : num(zoomed, \"v\");\n"
    "  matched.textContent = \"Matched: \" + (100 * sum / base).toFixed(1) + \"%\";\n"
    "  searchbtn.textContent = \"Reset Search\";\n"
    "}\n"
    "]]></script>\n";

struct svg_geom {
	int height;
	double scale; /* pixels per value unit */
	const char *unit;
	int64_t total;
};

static void frame_xml(const struct svg *s, const struct svg_node *n, const struct svg_geom *g,
		      struct base_sbuf *b)
{
	const char *name = s->names.strs[n->name];
	double x = SVG_XPAD + (double)n->start * g->scale, w = (double)n->value * g->scale;
	int y = g->height - SVG_YPAD_BOTTOM - (int)(n->depth + 1) * SVG_FRAME_H;
	char fill[32];

	frame_fill(n->kind, name, fill, sizeof(fill));
	base_sbuf__puts(b, "<g class=\"f\" data-name=\"");
	xml_append(b, name, SIZE_MAX);
	base_sbuf__printf(b, "\" data-s=\"%" PRId64 "\" data-v=\"%" PRId64 "\" data-d=\"%zu\">",
			     n->start, n->value, n->depth);
	base_sbuf__puts(b, "<title>");
	xml_append(b, name, SIZE_MAX);
	base_sbuf__printf(b, " (%" PRId64 " %s, %.2f%%)</title>", n->value, g->unit,
			     100.0 * (double)n->value / (double)g->total);
	base_sbuf__printf(b,
			     "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
			     "data-fill=\"%s\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%d\">",
			     x, y, w, SVG_FRAME_H - 1, fill, fill, x + 3, y + SVG_FRAME_H - 5);
	append_fitted(b, name, w);
	base_sbuf__puts(b, "</text></g>\n");
}

static size_t max_depth(const struct svg *s, const struct svg_geom *g)
{
	size_t d = 0;

	for (size_t i = 0; i < s->n; i++)
		if ((double)s->nodes[i].value * g->scale >= SVG_MIN_PX && s->nodes[i].depth > d)
			d = s->nodes[i].depth;
	return d;
}

static void write_head(FILE *f, const struct svg_geom *g, const char *title)
{
	struct base_sbuf t = {0};
	int h = g->height;

	xml_append(&t, title ? title : "Flame Graph", SIZE_MAX);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	fprintf(f,
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\" "
		"data-total=\"%" PRId64 "\" data-x0=\"%d\" data-fw=\"%d\">\n",
		SVG_WIDTH, h, SVG_WIDTH, h, g->total, SVG_XPAD, SVG_WIDTH - 2 * SVG_XPAD);
	fputs(svg_style, f);
	fputs(svg_script, f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(238,238,238)\"/>\n",
		SVG_WIDTH, h);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"%d\">%s</text>\n", SVG_WIDTH / 2, SVG_FONT * 2,
		t.s && !t.err ? t.s : "");
	fprintf(f, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n",
		SVG_XPAD, SVG_FONT * 2);
	fprintf(f, "<text id=\"search\" x=\"%d\" y=\"%d\">Search</text>\n", SVG_WIDTH - SVG_XPAD,
		SVG_FONT * 2);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", SVG_XPAD, h - 17);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n", SVG_WIDTH - SVG_XPAD,
		h - 17);
	base_sbuf__fini(&t);
}

static int write_doc(const struct svg *s, FILE *f, const char *title)
{
	struct svg_geom g = {.total = s->nodes[0].value, .unit = s->vi ? "ns" : "samples"};
	struct base_sbuf b = {0};
	int err = 0;

	g.scale = g.total > 0 ? (double)(SVG_WIDTH - 2 * SVG_XPAD) / (double)g.total : 0;
	g.height = (int)(max_depth(s, &g) + 1) * SVG_FRAME_H + SVG_YPAD_TOP + SVG_YPAD_BOTTOM;
	write_head(f, &g, title);
	fputs("<g id=\"frames\">\n", f);
	for (size_t i = 0; i < s->n && g.total > 0 && !err; i++) {
		if ((double)s->nodes[i].value * g.scale < SVG_MIN_PX)
			continue;
		b.len = 0;
		frame_xml(s, &s->nodes[i], &g, &b);
		err = b.err;
		if (!err && fwrite(b.s, 1, b.len, f) != b.len)
			err = -EIO;
	}
	fputs("</g>\n", f);
	if (g.total <= 0)
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">No samples</text>\n",
			SVG_WIDTH / 2, g.height / 2);
	fputs("</svg>\n", f);
	base_sbuf__fini(&b);
	return err;
}

int svg_write(const struct profile *p, FILE *f, const char *title)
{
	struct svg s = {.p = p};
	int err = build_tree(&s);

	if (!err)
		err = layout(&s);
	if (!err)
		err = write_doc(&s, f, title);
	if (!err && (fflush(f) != 0 || ferror(f)))
		err = -EIO;
	free(s.nodes);
	base_hmap__fini(&s.children);
	base_strtab__fini(&s.names);
	return err;
}
