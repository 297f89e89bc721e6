/*
 * Request parsing for /ingest: Pyroscope's series name "APP{k=v,...}", unix
 * times in any of four units, and the `profile` field of a multipart body.
 *
 * All of it is outside input: every length is bounded (SERVER_MAX_LABEL_*,
 * SERVER_MAX_LABELS) and every failure names the offending value in err.
 */
#include "server.h"
#include "ingest/ingest.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int perr(char *err, size_t errlen, int ret, const char *fmt, const char *what)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, what);
	return ret;
}

/* Prometheus label names: [a-zA-Z_][a-zA-Z0-9_.]* (Pyroscope also allows '.'). */
static bool valid_label_name(const char *k)
{
	if (!k[0] || !(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return false;
	for (const char *c = k; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.')
			return false;
	return true;
}

int server_labels__add(struct server_labels *l, const char *k, const char *v, char *err,
		       size_t errlen)
{
	char *kc, *vc;

	if (strlen(k) > SERVER_MAX_LABEL_NAME || !valid_label_name(k))
		return perr(
		    err, errlen, -EINVAL,
		    "invalid label name '%.128s' (want [a-zA-Z_][a-zA-Z0-9_.]*, at most 128)", k);
	if (strlen(v) > SERVER_MAX_LABEL_VALUE)
		return perr(err, errlen, -EINVAL, "value of label '%.128s' is over 1024 bytes", k);
	for (size_t i = 0; i < l->n; i++) {
		if (strcmp(l->keys[i], k))
			continue;
		if (!(vc = strdup(v)))
			return -ENOMEM;
		free(l->vals[i]);
		l->vals[i] = vc;
		return 0;
	}
	if (l->n == SERVER_MAX_LABELS)
		return perr(err, errlen, -E2BIG, "too many labels (at most %s)", "32");
	kc = strdup(k);
	vc = strdup(v);
	if (!kc || !vc) {
		free(kc);
		free(vc);
		return -ENOMEM;
	}
	l->keys[l->n] = kc;
	l->vals[l->n++] = vc;
	return 0;
}

void server_labels__fini(struct server_labels *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->keys[i]);
		free(l->vals[i]);
	}
	l->n = 0;
}

/* Parses "k=v,k2=v2" (values optionally double-quoted) into l. */
static int parse_label_list(char *s, struct server_labels *l, char *err, size_t errlen)
{
	char *save = NULL;
	int ret;

	for (char *kv = strtok_r(s, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), *v;
		size_t vl;

		while (*kv == ' ')
			kv++;
		if (!*kv)
			continue;
		if (!eq)
			return perr(err, errlen, -EINVAL, "label '%.128s' in name has no '='", kv);
		*eq = '\0';
		v = eq + 1;
		vl = strlen(v);
		if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
			v[vl - 1] = '\0';
			v++;
		}
		ret = server_labels__add(l, kv, v, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

int server_parse_name(const char *name, struct server_labels *out, char *err, size_t errlen)
{
	char *copy, *brace;
	size_t n = strlen(name);
	int ret;

	if (n == 0)
		return perr(err, errlen, -EINVAL, "%sname is empty (want APP{k=v,...})", "");
	if (n > 16384)
		return perr(err, errlen, -E2BIG, "%sname is over 16384 bytes", "");
	if (!(copy = strdup(name)))
		return -ENOMEM;
	brace = strchr(copy, '{');
	if (brace) {
		if (copy[n - 1] != '}') {
			free(copy);
			return perr(err, errlen, -EINVAL,
				    "name '%.200s' has '{' without a closing '}'", name);
		}
		copy[n - 1] = '\0';
		*brace = '\0';
	}
	ret = copy[0] ? server_labels__add(out, INGEST_NAME_LABEL, copy, err, errlen)
		      : perr(err, errlen, -EINVAL, "name '%.200s' has no application name", name);
	if (!ret && brace)
		ret = parse_label_list(brace + 1, out, err, errlen);
	free(copy);
	return ret;
}

/* memmem for the boundary search. */
static const uint8_t *find(const uint8_t *h, size_t hl, const char *n, size_t nl)
{
	return memmem(h, hl, n, nl);
}

/* Boundary token of a multipart content type into buf ("--" prefixed). 0 or -EINVAL. */
static int multipart_boundary(const char *ct, char *buf, size_t len)
{
	const char *b = ct ? strstr(ct, "boundary=") : NULL;
	size_t n;

	if (!b)
		return -EINVAL;
	b += strlen("boundary=");
	if (*b == '"')
		b++;
	n = strcspn(b, "\";, ");
	if (n == 0 || n > 200 || n + 3 > len)
		return -EINVAL;
	snprintf(buf, len, "--%.*s", (int)n, b);
	return 0;
}

int server_multipart_field(const char *content_type, const uint8_t *body, size_t len,
			   const char *field, const uint8_t **part, size_t *part_len)
{
	char bnd[256], want[300];
	const uint8_t *p = body, *end = body + len;
	size_t bl;

	if (multipart_boundary(content_type, bnd, sizeof(bnd)))
		return -EINVAL;
	bl = strlen(bnd);
	snprintf(want, sizeof(want), "name=\"%s\"", field);
	while ((p = find(p, (size_t)(end - p), bnd, bl))) {
		const uint8_t *hdr = p + bl, *hend, *data, *next;

		if (end - hdr >= 2 && hdr[0] == '-' && hdr[1] == '-')
			return -ENOENT; /* the closing boundary */
		hend = find(hdr, (size_t)(end - hdr), "\r\n\r\n", 4);
		if (!hend)
			return -EINVAL;
		data = hend + 4;
		next = find(data, (size_t)(end - data), bnd, bl);
		if (!next)
			return -EINVAL;
		if (find(hdr, (size_t)(hend - hdr), want, strlen(want))) {
			*part = data;
			*part_len = (size_t)(next - data);
			if (*part_len >= 2 && next[-2] == '\r' && next[-1] == '\n')
				*part_len -= 2;
			return 0;
		}
		p = next;
	}
	return -ENOENT;
}
