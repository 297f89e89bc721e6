/*
 * Private to src/server/: the Connect protocol's pieces (server_connect.c,
 * server_pbjson.c) and the Pyroscope shapes of the query engine's typed results
 * (server_render.c), which both the Connect methods and /pyroscope/... use.
 */
#ifndef HEARTH_SERVER_CONNECT_H
#define HEARTH_SERVER_CONNECT_H

#include <protobuf-c/protobuf-c.h>
#include <stdint.h>
#include <stdio.h>

#include "query/query.h"
#include "server_impl.h"

/* ---- proto3 JSON mapping (server_pbjson.c) ---- */

/* Deepest message nesting a JSON request may have (hearth's requests have 3). */
#define PBJSON_MAX_DEPTH 16

/*
 * Decodes JSON text (buf, len) into a new message of type d, after the proto3
 * JSON mapping: field names as in the .proto or lowerCamelCase, 64-bit integers
 * as numbers or strings, enums by name or number, null as the default. Unknown
 * fields are ignored (a newer client may send more). 0, -EINVAL (err names the
 * field and what was wrong), -EFBIG (json-c's tree of the text would take more
 * than budget / 2 bytes: base_json_cost; err names both), -ENOMEM. *out is
 * freed with protobuf_c_message_free_unpacked(*out, NULL).
 */
int pbjson_decode_budget(const ProtobufCMessageDescriptor *d, const char *buf, size_t len,
			 size_t budget, ProtobufCMessage **out, char *err, size_t errlen);
/* pbjson_decode_budget with the budget of an identity body of len bytes,
 * server_memory_budget(len). */
int pbjson_decode(const ProtobufCMessageDescriptor *d, const char *buf, size_t len,
		  ProtobufCMessage **out, char *err, size_t errlen);
/*
 * Writes m as proto3 JSON: lowerCamelCase names, fields at their default left
 * out, 64-bit integers as strings, enums by name. 0 or -ENOTSUP (a non-empty
 * bytes field: none of hearth's answers has one).
 */
int pbjson_encode(const ProtobufCMessage *m, FILE *out);

/* ---- the engine's typed answers in Pyroscope's shapes (server_render.c) ---- */

/* One flame graph in Pyroscope's layout (querier.proto's FlameGraph). */
struct pyro_flame {
	size_t n_names;
	char **names; /* owned; names[0] is "total" */
	size_t n_levels;
	struct pyro_level {
		size_t n;	 /* values: 4 per node (7 in a diff) */
		int64_t *values; /* owned */
	} * levels;
	int64_t total, max_self;
	int64_t left_ticks, right_ticks; /* a diff's two totals */
	const char *unit;		 /* "samples" or "nanoseconds" (static) */
};
void pyro_flame__fini(struct pyro_flame *fg);

/*
 * The selector of a Pyroscope query: label_selector with a
 * `__profile_type__="TYPE"` matcher added (type NULL or "": none added). A
 * label_selector of "" means every series. *out is malloc'd. 0, -EINVAL (err
 * says why), -ENOMEM.
 */
int pyro_selector(const char *type, const char *label_selector, char **out, char *err,
		  size_t errlen);
/* Which sample value a profile type counts: 1 (nanoseconds) for a CPU type in
 * nanoseconds, else 0 (a count, or the one value of other types). */
int pyro_value_index(const char *type);
/* A Pyroscope query "TYPE{...}" or hearth's own "APP{...}" / "{...}" into a
 * selector (*sel, malloc'd) and the value index. 0, -EINVAL, -ENOMEM. */
int pyro_query(const char *query, char **sel, int *value_index, char *err, size_t errlen);

/*
 * The flame graph of a typed tree (query_tree's, or query_diff's: 7 values per
 * node), laid out by level. 0, -EIO (no nodes, or not in pre-order: a node
 * more than one level below the one before it), -ENOMEM; on failure *out is
 * empty. fuzz_render lays out trees of its own through it.
 */
int pyro_flame_layout(const struct query_tree *t, struct pyro_flame *out);
/* The flame graph of q's merge (query_tree's tree, laid out by level). */
int pyro_flame(struct store *s, const struct query_request *q, struct pyro_flame *out, char *err,
	       size_t errlen);
/* The diff flame graph of two selections (query_diff's tree; 7 values per node:
 * left offset, total, self, right offset, total, self, name index). */
int pyro_flame_diff(struct store *s, const struct query_request *l, const struct query_request *r,
		    struct pyro_flame *out, char *err, size_t errlen);

/* /pyroscope/render's answer without the timeline: flamebearer (numTicks ticks) and
 * metadata ("single" or "double" format, the query's units and name). */
void pyro_flamebearer_json(FILE *f, const struct pyro_flame *fg, int64_t ticks, const char *format,
			   const char *query);

/* Label names (values of label `name` when name is non-NULL) of the series
 * selected by any of the n selectors (none: q's) over q's range, in one pass
 * over the series, sorted and distinct; more than QUERY_MAX_MATCHERS
 * selectors: -E2BIG. *out as query_labels'. */
int pyro_labels(struct store *s, const struct query_request *q, const char *const *selectors,
		size_t n, const char *name, struct query_strings *out, char *err, size_t errlen);

/* ---- HTTP handlers ---- */

/* POST /querier.v1.QuerierService/METHOD (server_connect.c). */
enum MHD_Result server_h_connect(struct server *s, struct server_req *r);
/* A pipeline rejection (401, 405, 413, 503, ...) in Connect's error shape
 * ({"code", "message"}), under the same HTTP status. */
enum MHD_Result server_connect_reject(struct server_req *r, unsigned status,
				      enum server_reject why, const char *msg);
/* GET /pyroscope/render, /pyroscope/render-diff, /pyroscope/label-values,
 * /pyroscope/labels (server_render.c). */
enum MHD_Result server_h_pyroscope(struct server *s, struct server_req *r);

#endif /* HEARTH_SERVER_CONNECT_H */
