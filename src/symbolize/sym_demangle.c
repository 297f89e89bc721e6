/*
 * sym_demangle: a fast path for the common Itanium C++ names, ahead of libiberty.
 *
 * A big C++ object's first sight demangles tens of thousands of names (node: 17,500
 * of the 22,000 names that 50,000 random addresses hit), and libiberty builds a tree
 * of each name, walks it to count templates and scopes, then prints it: ~1 us a name,
 * a quarter of a cold `hearth symbolize` of node. Most names are plain nested names,
 * class templates' members and function templates, such as
 *   _ZN2v88internal4Heap18IsMainThreadParkedEPNS0_9LocalHeapE
 *   -> v8::internal::Heap::IsMainThreadParked(v8::internal::LocalHeap*)
 * and those are printed here in one pass over the name, as libiberty prints them
 * (cplus_demangle_v3 with DMGL_PARAMS | DMGL_ANSI), byte for byte. Anything else — a
 * conversion operator or a templated one, a local or unnamed entity (lambdas), a
 * function, array or member pointer type, a qualifier other than const, a float or a
 * name as a template argument, a pack in a pack, a pack expansion that names no pack
 * of the function's own template arguments, or a candidate made from one (a pack's
 * element printed alone), a standard abbreviation other than St, Sa, Sb
 * and the complete types Ss, Si, So, Sd (as types, not prefixes), a thunk other than
 * a non-virtual one, a constructor whose class came from a substitution, a name longer
 * than the buffer — is declined, and libiberty demangles it. (node: 65,946 of its
 * 78,865 C++ names are taken.)
 *
 * What is handled (the Itanium ABI's grammar, the subset):
 *   _Z [Th [n] <offset> _] [L] name [return-type] [params] clone-suffix*
 *     name: [St] source-name [template-args] | operator | N [K] component+ E
 *     component: source-name | L source-name | S_ / S<seq>_ / St | C1-C3 | D0-D2
 *                | template-args | operator (the last)
 *     source-name: <length> <identifier> (B <length> <tag>)*
 *     type: builtin | K type | P type | R type | O type | [St] source-name
 *           | N component+ E | S_ / S<seq>_ | Sa / Sb | Ss / Si / So / Sd
 *           | T_ / T<n>_, each with
 *           template-args where they name a template
 *     template-args: I (arg | J arg* E)+ E,  arg: type | L type [n] digits E
 *     type (in a function's parameters): Dp type, its pattern printed once per
 *           element of the pack its T_ names ("int&&, char&&"); what prints nothing
 *           (an empty pack) takes back the ", " before it when all after it print
 *           nothing too, as libiberty does (whose "> >" then loses its space)
 * A return type is there when the name ends in template arguments (a function
 * template); T_ prints that list's arguments. The substitution candidates are those
 * libiberty records (each prefix followed by more of the name, an unscoped template's
 * name, each class name, template-id, template parameter, qualified, pointer and
 * reference type; never a builtin or a substitution itself). tests/unit/test_symbolize.c
 * compares this with libiberty on every C++ name of the system's libstdc++ and on a
 * list of hand-picked ones.
 */
#include "symbolize/sym_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DM_OUT	 1024 /* longest name printed here */
#define DM_POOL	 4096 /* the substitution candidates' text */
#define DM_SUBS	 64
#define DM_DEPTH 16 /* nested qualifiers and pointers */

/* What a type is at its top, where libiberty would collapse what is added to it
 * (a reference to a reference, const const): such names are declined. */
enum {
	DM_REF = 1,
	DM_CONST = 2,
	DM_PTR = 4, /* (never a prefix of a name) */
	/* a candidate printed from one element of a pack (inside Dp), or a whole
	 * expansion: declined where used */
	DM_PACK = 8,
	/* a template argument that is a pack: its elements are pack_elems[off, off + len) */
	DM_PACK_ARG = 16,
};

struct dm_sub {
	uint16_t off, len;
	uint8_t top; /* DM_REF, DM_CONST, DM_PTR */
};

struct dm {
	const char *p; /* next byte of the mangled name (NUL-terminated) */
	char out[DM_OUT];
	size_t n;
	char pool[DM_POOL];
	size_t pool_n;
	struct dm_sub subs[DM_SUBS];
	size_t n_subs;
	const char *last; /* the last source name read (a constructor's name) */
	size_t last_len;
	/* a function template's arguments (what T_, T0_, ... print) */
	struct dm_sub targs[DM_SUBS];
	size_t n_targs;
	bool fn_template; /* the name ends in template arguments: a return type follows */
	/* the elements of packs among targs */
	struct dm_sub pack_elems[DM_SUBS];
	size_t n_pack_elems;
	/* in a pack expansion's pattern (Dp): the element a pack's T_ prints, the pack's
	 * number in targs (-1: none met yet), and whether candidates are recorded (the
	 * pattern's first printing only) */
	bool in_expansion, no_subs;
	size_t pack_i;
	long pack_targ;
	bool fail;
};

static void put(struct dm *d, const char *s, size_t n)
{
	if (d->fail || n > DM_OUT - d->n) {
		d->fail = true;
		return;
	}
	memcpy(d->out + d->n, s, n);
	d->n += n;
}

#define PUTS(d, lit) put((d), (lit), sizeof(lit) - 1)

/* out[from, n) becomes a substitution candidate. */
static void add_sub(struct dm *d, size_t from, unsigned top)
{
	size_t len = d->n - from;

	if (d->no_subs)
		return;
	if (d->in_expansion)
		top |= DM_PACK;
	if (d->fail || d->n_subs == DM_SUBS || len > DM_POOL - d->pool_n) {
		d->fail = true;
		return;
	}
	memcpy(d->pool + d->pool_n, d->out + from, len);
	d->subs[d->n_subs++] = (struct dm_sub){(uint16_t)d->pool_n, (uint16_t)len, (uint8_t)top};
	d->pool_n += len;
}

/* out[from, n) kept apart in arr (*n of DM_SUBS entries): its text stored as a
 * candidate's is, then taken back off the candidates (a template argument, a
 * pack's element). */
static void keep_apart(struct dm *d, size_t from, unsigned top, struct dm_sub *arr, size_t *n)
{
	add_sub(d, from, top);
	if (d->fail || *n == DM_SUBS) {
		d->fail = true;
		return;
	}
	arr[(*n)++] = d->subs[--d->n_subs];
}

/* <number> <identifier>, printed; "_GLOBAL_" [._$] "N"... as libiberty shows it. */
static void source_name(struct dm *d)
{
	size_t len = 0;
	const char *s;

	if (*d->p < '1' || *d->p > '9') {
		d->fail = true;
		return;
	}
	while (*d->p >= '0' && *d->p <= '9' && len < DM_OUT)
		len = len * 10 + (size_t)(*d->p++ - '0');
	s = d->p;
	if (len >= DM_OUT || strnlen(s, len) < len) {
		d->fail = true;
		return;
	}
	d->p += len;
	d->last = s;
	d->last_len = len;
	if (len >= 10 && !memcmp(s, "_GLOBAL_", 8) && (s[8] == '.' || s[8] == '_' || s[8] == '$') &&
	    s[9] == 'N')
		PUTS(d, "(anonymous namespace)");
	else
		put(d, s, len);
	while (*d->p == 'B') { /* ABI tags: "name[abi:cxx11]" (the last name stays) */
		size_t tag = 0;

		d->p++;
		if (*d->p < '1' || *d->p > '9') {
			d->fail = true;
			return;
		}
		while (*d->p >= '0' && *d->p <= '9' && tag < DM_OUT)
			tag = tag * 10 + (size_t)(*d->p++ - '0');
		if (tag >= DM_OUT || strnlen(d->p, tag) < tag) {
			d->fail = true;
			return;
		}
		PUTS(d, "[abi:");
		put(d, d->p, tag);
		PUTS(d, "]");
		d->p += tag;
	}
	/* a discriminator follows: not handled */
	if (*d->p == '_')
		d->fail = true;
}

/*
 * An operator's name (two lowercase letters), printed as libiberty prints it:
 * "operator==", "operator new[]". Conversions, literal and vendor operators are
 * declined, and so is one with template arguments ("operator< <int>").
 */
static void operator_name(struct dm *d)
{
	static const char *const ops[][2] = {
	    {"nw", " new"}, {"na", " new[]"}, {"dl", " delete"}, {"da", " delete[]"}, {"ps", "+"},
	    {"ng", "-"},    {"ad", "&"},      {"de", "*"},	 {"co", "~"},	      {"pl", "+"},
	    {"mi", "-"},    {"ml", "*"},      {"dv", "/"},	 {"rm", "%"},	      {"an", "&"},
	    {"or", "|"},    {"eo", "^"},      {"aS", "="},	 {"pL", "+="},	      {"mI", "-="},
	    {"mL", "*="},   {"dV", "/="},     {"rM", "%="},	 {"aN", "&="},	      {"oR", "|="},
	    {"eO", "^="},   {"ls", "<<"},     {"rs", ">>"},	 {"lS", "<<="},	      {"rS", ">>="},
	    {"eq", "=="},   {"ne", "!="},     {"lt", "<"},	 {"gt", ">"},	      {"le", "<="},
	    {"ge", ">="},   {"ss", "<=>"},    {"nt", "!"},	 {"aa", "&&"},	      {"oo", "||"},
	    {"pp", "++"},   {"mm", "--"},     {"cm", ","},	 {"pm", "->*"},	      {"pt", "->"},
	    {"cl", "()"},   {"ix", "[]"},
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (d->p[0] != ops[i][0][0] || d->p[1] != ops[i][0][1])
			continue;
		d->p += 2;
		PUTS(d, "operator");
		put(d, ops[i][1], strlen(ops[i][1]));
		if (*d->p == 'I' || *d->p == 'B')
			d->fail = true;
		return;
	}
	d->fail = true;
}

/* S_ or S<seq>_ (St is the caller's): the candidate printed; *top its DM_ flags. */
static void substitution(struct dm *d, unsigned *top)
{
	size_t i = 0;
	char c;

	d->p++; /* 'S' */
	if (*d->p != '_') {
		while ((c = *d->p) != '_') {
			if (c >= '0' && c <= '9')
				i = i * 36 + (size_t)(c - '0');
			else if (c >= 'A' && c <= 'Z')
				i = i * 36 + (size_t)(c - 'A' + 10);
			else {
				d->fail = true; /* Sa, Ss, ... or malformed */
				return;
			}
			if (i >= DM_SUBS) {
				d->fail = true;
				return;
			}
			d->p++;
		}
		i++;
	}
	d->p++; /* '_' */
	if (i >= d->n_subs) {
		d->fail = true;
		return;
	}
	if (d->subs[i].top & DM_PACK) {
		d->fail = true;
		return;
	}
	put(d, d->pool + d->subs[i].off, d->subs[i].len);
	if (top)
		*top = d->subs[i].top;
}

static void type(struct dm *d, unsigned *top, int depth);

/*
 * L <type> [n] <digits> E, a template argument that is a number (not a candidate):
 * as libiberty prints it, int plain, then the suffix of unsigned, long, unsigned long,
 * long long, unsigned long long; bool 0 and 1 as false and true; any other integral or
 * enum type as "(type)value". Floats and names are declined.
 */
static void literal(struct dm *d)
{
	static const char codes[] = "ijlmxy";
	static const char *const suffix[] = {"", "u", "l", "ul", "ll", "ull"};
	const char *c = d->p[1] ? strchr(codes, d->p[1]) : NULL, *digits;
	char t = d->p[1];
	unsigned top;
	bool neg;

	if (t == 'b' && (d->p[2] == '0' || d->p[2] == '1') && d->p[3] == 'E') {
		if (d->p[2] == '1')
			PUTS(d, "true");
		else
			PUTS(d, "false");
		d->p += 4;
		return;
	}
	if (c) {
		d->p += 2;
	} else {
		/* another integral or an enum type: "(type)value"; not a float's hex image,
		 * nor a name (L_Z...) */
		if (!t || t == 'f' || t == 'd' || t == 'e' || t == 'g' || t == '_' || t == 'D' ||
		    t == 'z' || t == 'v') {
			d->fail = true;
			return;
		}
		d->p++;
		PUTS(d, "(");
		type(d, &top, 1);
		PUTS(d, ")");
		if (d->fail || (top & (DM_REF | DM_CONST))) {
			d->fail = true;
			return;
		}
	}
	neg = *d->p == 'n';
	digits = d->p += neg;
	while (*d->p >= '0' && *d->p <= '9')
		d->p++;
	if (d->p == digits || *d->p != 'E') {
		d->fail = true;
		return;
	}
	if (neg)
		PUTS(d, "-");
	put(d, digits, (size_t)(d->p - digits));
	if (c)
		put(d, suffix[c - codes], strlen(suffix[c - codes]));
	d->p++; /* 'E' */
}

/*
 * J (type | literal)* E, an argument pack: its elements printed "a, b" (nothing when
 * empty); when record, one argument of targs whose elements T_ prints in a Dp.
 */
static void pack_args(struct dm *d, int depth, bool record)
{
	size_t first_elem = d->n_pack_elems;
	unsigned top;

	d->p++; /* 'J' */
	for (bool first = true; !d->fail && *d->p != 'E'; first = false) {
		size_t from;

		if (!*d->p || *d->p == 'J' || d->in_expansion) {
			d->fail = true; /* (a pack in a pack, or in a pattern) */
			return;
		}
		if (!first)
			PUTS(d, ", ");
		from = d->n;
		top = 0;
		if (*d->p == 'L')
			literal(d);
		else
			type(d, &top, depth + 1);
		if (record && !d->fail)
			keep_apart(d, from, top, d->pack_elems, &d->n_pack_elems);
	}
	if (d->fail)
		return;
	d->p++; /* 'E' */
	if (record) {
		if (d->n_targs == DM_SUBS) {
			d->fail = true;
			return;
		}
		d->targs[d->n_targs++] = (struct dm_sub){(uint16_t)first_elem,
							 (uint16_t)(d->n_pack_elems - first_elem),
							 DM_PACK_ARG};
	}
}

/*
 * I type+ E, printed "<a, b>" (libiberty's "> >" where an argument ends in '>'). The
 * arguments do not change the last source name (a constructor's name), as in
 * libiberty. Numbers are printed (literal); expressions, packs and template
 * parameters are declined.
 */
static void template_args(struct dm *d, int depth, bool record)
{
	const char *last = d->last;
	size_t last_len = d->last_len;
	unsigned top;

	d->p++; /* 'I' */
	/* as libiberty: never "<<" (a name ending in '<' before its arguments) */
	if (d->n && d->out[d->n - 1] == '<')
		PUTS(d, " ");
	PUTS(d, "<");
	if (record)
		d->n_targs = d->n_pack_elems = 0;
	/* libiberty drops the ", " before arguments that print nothing (empty packs) when
	 * all after them print nothing too: what follows the last one printed goes */
	size_t last_end = d->n;
	bool cut;

	for (bool first = true; !d->fail && *d->p != 'E'; first = false) {
		size_t from;

		if (!*d->p) {
			d->fail = true;
			return;
		}
		if (!first)
			PUTS(d, ", ");
		from = d->n;
		top = 0;
		if (*d->p == 'J') {
			pack_args(d, depth, record);
			if (d->n > from)
				last_end = d->n;
			continue;
		}
		if (*d->p == 'L')
			literal(d);
		else
			type(d, &top, depth + 1);
		last_end = d->n;
		if (record && !d->fail)
			keep_apart(d, from, top, d->targs, &d->n_targs);
	}
	if (d->fail)
		return;
	/* libiberty takes the ", " back by shortening its buffer, but its last character
	 * stays the ' ': no space then before the '>', even after a '>' ("A<B<int>>") */
	cut = d->n > last_end;
	d->n = last_end;
	d->p++; /* 'E' */
	if (!cut && d->n && d->out[d->n - 1] == '>')
		PUTS(d, " ");
	PUTS(d, ">");
	d->last = last;
	d->last_len = last_len;
}

/*
 * N [K] component+ E, printed. In a function's name (is_type false) *is_const says
 * whether it is a const member function; in a type the whole name is a candidate too.
 */
static void nested_name(struct dm *d, bool is_type, bool *is_const, int depth)
{
	size_t start = d->n;
	bool first = true, was_sub = false, bare_sub = false;

	d->p++; /* 'N' */
	if (*d->p == 'K' && !is_type) {
		*is_const = true;
		d->p++;
	}
	while (!d->fail && *d->p != 'E') {
		char c = *d->p;

		if (c == 'I' && !first) { /* the arguments of the template named so far */
			template_args(d, depth, !is_type);
			bare_sub = false;
			if (!d->fail && *d->p == 'E' && !is_type)
				d->fn_template = true; /* its return type follows */
			if (!d->fail && *d->p != 'E')
				add_sub(d, start, 0);
			continue;
		}
		if (!first)
			PUTS(d, "::");
		if (c == 'S' && first) {
			if (d->p[1] == 't') {
				d->p += 2;
				PUTS(d, "std");
			} else {
				unsigned top = 0;

				substitution(d, &top);
				if (top)
					d->fail = true; /* a qualified type as a prefix */
			}
			was_sub = bare_sub = true;
		} else if ((c == 'C' || c == 'D') && !first) {
			char k = d->p[1];

			if (was_sub || !(c == 'C' ? k >= '1' && k <= '3' : k >= '0' && k <= '2') ||
			    d->p[2] != 'E') {
				d->fail = true; /* (a constructor must end the name) */
				return;
			}
			d->p += 2;
			if (c == 'D')
				PUTS(d, "~");
			put(d, d->last, d->last_len);
			was_sub = false;
			continue; /* at 'E' */
		} else if (c >= 'a' && c <= 'z' && !first && !is_type) {
			operator_name(d); /* the function's own name: the name must end here */
			if (*d->p != 'E')
				d->fail = true;
			bare_sub = false;
			continue;
		} else {
			if (c == 'L' && !is_type)
				d->p++;
			source_name(d);
			was_sub = bare_sub = false;
		}
		first = false;
		if (!d->fail && *d->p != 'E' && !was_sub)
			add_sub(d, start, 0);
	}
	if (first || bare_sub || d->fail) {
		/* (a prefix alone, "NS_E" or "NStE", is no nested name: libiberty fails it) */
		d->fail = true;
		return;
	}
	d->p++; /* 'E' */
	if (is_type)
		add_sub(d, start, 0);
}

/* Builtin type of code c (after 'D' when dc), or NULL. */
static const char *builtin(char c, bool dc)
{
	if (dc)
		switch (c) {
		case 'n':
			return "decltype(nullptr)";
		case 'i':
			return "char32_t";
		case 's':
			return "char16_t";
		case 'u':
			return "char8_t";
		default:
			return NULL;
		}
	switch (c) {
	case 'v':
		return "void";
	case 'w':
		return "wchar_t";
	case 'b':
		return "bool";
	case 'c':
		return "char";
	case 'a':
		return "signed char";
	case 'h':
		return "unsigned char";
	case 's':
		return "short";
	case 't':
		return "unsigned short";
	case 'i':
		return "int";
	case 'j':
		return "unsigned int";
	case 'l':
		return "long";
	case 'm':
		return "unsigned long";
	case 'x':
		return "long long";
	case 'y':
		return "unsigned long long";
	case 'n':
		return "__int128";
	case 'o':
		return "unsigned __int128";
	case 'f':
		return "float";
	case 'd':
		return "double";
	case 'e':
		return "long double";
	case 'g':
		return "__float128";
	case 'z':
		return "...";
	default:
		return NULL;
	}
}

/* The standard abbreviation S<c> of a complete type, as libiberty prints it without
 * DMGL_VERBOSE, or NULL. */
static const char *std_stream(char c)
{
	switch (c) {
	case 's':
		return "std::string";
	case 'i':
		return "std::istream";
	case 'o':
		return "std::ostream";
	case 'd':
		return "std::iostream";
	default:
		return NULL;
	}
}

/* One type, printed; *top its DM_ flags. */
static void type(struct dm *d, unsigned *top, int depth)
{
	size_t start = d->n;
	const char *b;
	unsigned inner = 0;
	char c = *d->p;

	*top = 0;
	if (depth > DM_DEPTH) {
		d->fail = true;
		return;
	}
	if ((b = builtin(c, false)) || (c == 'D' && (b = builtin(d->p[1], true)))) {
		d->p += c == 'D' ? 2 : 1;
		put(d, b, strlen(b));
		return;
	}
	switch (c) {
	case 'K':
	case 'P':
	case 'R':
	case 'O':
		d->p++;
		type(d, &inner, depth + 1);
		if ((inner & DM_REF) || (c == 'K' && (inner & DM_CONST))) {
			d->fail =
			    true; /* const, pointer or reference to a reference; const const */
			return;
		}
		if (c == 'K')
			PUTS(d, " const");
		else if (c == 'P')
			PUTS(d, "*");
		else if (c == 'R')
			PUTS(d, "&");
		else
			PUTS(d, "&&");
		*top = c == 'R' || c == 'O' ? DM_REF : c == 'K' ? DM_CONST : DM_PTR;
		add_sub(d, start, *top);
		return;
	case 'N':
		nested_name(d, true, NULL, depth);
		return;
	case 'D': { /* Dp <pattern>: the pattern once per element of the pack it names */
		const char *pat, *end;
		size_t len;

		if (d->p[1] != 'p' || d->in_expansion) {
			d->fail = true;
			return;
		}
		d->p += 2;
		pat = d->p;
		d->in_expansion = true;
		d->pack_i = 0;
		d->pack_targ = -1;
		type(d, &inner, depth + 1);
		end = d->p;
		if (d->fail || d->pack_targ < 0) {
			d->fail = true; /* no pack in it: libiberty prints "pattern..." */
			return;
		}
		len = d->targs[d->pack_targ].len;
		if (!len)
			d->n = start;
		d->no_subs = true;
		for (size_t i = 1; i < len && !d->fail; i++) {
			PUTS(d, ", ");
			d->p = pat;
			d->pack_i = i;
			type(d, &inner, depth + 1);
			if (d->p != end)
				d->fail = true;
		}
		d->no_subs = d->in_expansion = false;
		d->pack_i = 0;
		*top = DM_PACK;
		add_sub(d, start, DM_PACK);
		return;
	}
	case 'T': { /* a function template's argument: T_, T0_, T1_, ... */
		size_t i = 0;

		d->p++;
		if (*d->p != '_') {
			while (*d->p >= '0' && *d->p <= '9' && i < DM_SUBS)
				i = i * 10 + (size_t)(*d->p++ - '0');
			i++;
		}
		if (*d->p != '_' || i >= d->n_targs) {
			d->fail = true;
			return;
		}
		d->p++;
		if (d->targs[i].top & DM_PACK_ARG) { /* a pack: its element pack_i, in a Dp */
			const struct dm_sub *e = &d->pack_elems[d->targs[i].off + d->pack_i];

			if (!d->in_expansion || (d->pack_targ >= 0 && d->pack_targ != (long)i)) {
				d->fail = true;
				return;
			}
			d->pack_targ = (long)i;
			*top = 0;
			if (d->pack_i < d->targs[i].len) {
				put(d, d->pool + e->off, e->len);
				*top = e->top;
			}
		} else {
			put(d, d->pool + d->targs[i].off, d->targs[i].len);
			*top = d->targs[i].top;
		}
		add_sub(d, start, *top);
		if (*d->p == 'I' && *top) {
			d->fail = true;
			return;
		}
		break;
	}
	case 'S':
		if (d->p[1] == 't') {
			d->p += 2;
			PUTS(d, "std::");
			source_name(d);
			add_sub(d, start, 0);
		} else if ((b = std_stream(d->p[1])) && d->p[2] != 'I') {
			/* std::string, std::ostream, ...: their short form, as a type (not as
			 * a prefix, where libiberty prints the whole template); complete
			 * types, so not candidates */
			d->p += 2;
			put(d, b, strlen(b));
			return;
		} else if (d->p[1] == 'a' || d->p[1] == 'b') {
			/* std::allocator, std::basic_string: not candidates themselves, and
			 * only with their arguments here */
			if (d->p[1] == 'a')
				PUTS(d, "std::allocator");
			else
				PUTS(d, "std::basic_string");
			d->p += 2;
			if (*d->p != 'I') {
				d->fail = true;
				return;
			}
		} else {
			substitution(d, top);
			if (*d->p == 'I' && *top) {
				d->fail = true; /* arguments to a qualified type */
				return;
			}
		}
		break;
	default:
		if (c >= '1' && c <= '9') {
			source_name(d);
			add_sub(d, start, 0);
			break;
		}
		d->fail = true;
		return;
	}
	/* a template named so far, then its arguments: the whole a candidate too */
	if (!d->fail && *d->p == 'I') {
		template_args(d, depth, false);
		*top = 0;
		add_sub(d, start, 0);
	}
}

/* Clone suffixes, as libiberty's d_clone_suffix reads them: " [clone .part.0]". */
static void clone_suffixes(struct dm *d)
{
	while (!d->fail && *d->p == '.') {
		const char *s = d->p, *e = s;
		char c = e[1];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
			d->fail = true;
			return;
		}
		for (e += 2; (*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || *e == '_'; e++)
			;
		while (*e == '.' && e[1] >= '0' && e[1] <= '9')
			for (e += 2; *e >= '0' && *e <= '9'; e++)
				;
		PUTS(d, " [clone ");
		put(d, s, (size_t)(e - s));
		PUTS(d, "]");
		d->p = e;
	}
	if (*d->p)
		d->fail = true;
}

char *sym_demangle_fast(const char *sys, bool *declined)
{
	struct dm *d, dm;
	bool is_const = false;
	unsigned top;
	char *r;

	d = &dm;
	d->n = d->pool_n = d->n_subs = 0;
	d->fail = false;
	d->last = NULL;
	d->last_len = 0;
	d->n_targs = d->n_pack_elems = 0;
	d->in_expansion = d->no_subs = false;
	d->pack_i = 0;
	d->pack_targ = -1;
	d->fn_template = false;
	d->p = sys + 2; /* "_Z" */
	*declined = true;
	if (d->p[0] == 'T' && d->p[1] == 'h') { /* Th [n] <offset> _ <encoding> */
		const char *digits = d->p += 2 + (d->p[2] == 'n');

		while (*d->p >= '0' && *d->p <= '9')
			d->p++;
		if (d->p == digits || *d->p != '_' || (d->p[1] != 'N' && d->p[1] != 'L' &&
						       (d->p[1] < '1' || d->p[1] > '9')))
			return NULL;
		d->p++;
		PUTS(d, "non-virtual thunk to ");
	}
	switch (*d->p) {
	case 'N':
		nested_name(d, false, &is_const, 0);
		break;
	case 'L':
		d->p++;
		source_name(d);
		break;
	case 'S':
		if (d->p[1] != 't')
			return NULL;
		d->p += 2;
		PUTS(d, "std::");
		source_name(d);
		break;
	default:
		if (*d->p >= 'a' && *d->p <= 'z') {
			operator_name(d);
			if (!*d->p || *d->p == '.')
				d->fail = true; /* (an operator is a function) */
		} else {
			source_name(d);
		}
	}
	if (!d->fail && *d->p == 'I' && sys[2] != 'N') { /* an unscoped template */
		add_sub(d, 0, 0);
		template_args(d, 0, true);
		d->fn_template = true;
	}
	if (d->fail)
		return NULL;
	if (d->fn_template && sys[2] == 'T')
		return NULL; /* a thunk to a function template: (its return type's place) */
	if (d->fn_template) { /* the return type, printed before the name */
		size_t name_len = d->n;
		char tmp[DM_OUT];

		if (!*d->p || *d->p == '.')
			return NULL;
		type(d, &top, 0);
		if (d->fail || d->n + 1 > DM_OUT || !*d->p || *d->p == '.')
			return NULL; /* (libiberty wants the parameters after a return type) */
		memcpy(tmp, d->out + name_len, d->n - name_len);
		tmp[d->n - name_len] = ' ';
		memcpy(tmp + d->n - name_len + 1, d->out, name_len);
		d->n++;
		memcpy(d->out, tmp, d->n);
	}
	if (*d->p && *d->p != '.') { /* the parameters: a function */
		PUTS(d, "(");
		if (d->p[0] == 'v' && (!d->p[1] || d->p[1] == '.')) {
			d->p++;
		} else {
			size_t last_end = d->n; /* (the ", " before empty expansions: as above) */

			for (bool first = true; !d->fail && *d->p && *d->p != '.'; first = false) {
				size_t from;

				if (!first)
					PUTS(d, ", ");
				from = d->n;
				type(d, &top, 0);
				if (d->n > from)
					last_end = d->n;
			}
			d->n = last_end;
		}
		PUTS(d, ")");
		if (is_const)
			PUTS(d, " const");
	} else if (is_const || *d->p) {
		return NULL; /* (libiberty takes no clone suffix after a data name) */
	}
	clone_suffixes(d);
	if (d->fail)
		return NULL;
	*declined = false;
	if ((r = malloc(d->n + 1))) {
		memcpy(r, d->out, d->n);
		r[d->n] = '\0';
	}
	return r;
}
