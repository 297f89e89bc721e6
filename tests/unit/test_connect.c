/*
 * Unit tests of the Connect pieces of src/server/: the proto3 JSON mapping of
 * protobuf-c messages (server_pbjson.c) and the Pyroscope query helpers of
 * server_render.c (a type added to a selector, the value a type counts).
 */
#include "unit.h"

#include "querier.pb-c.h"
#include "server/server_connect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int decode(const char *json, ProtobufCMessage **m, char *err, size_t errlen)
{
	return pbjson_decode(&querier__v1__select_series_request__descriptor, json, strlen(json), m,
			     err, errlen);
}

/* Field names as in the .proto and in lowerCamelCase, int64 as number and string,
 * enums by name, repeated fields, null, unknown fields: all decoded as proto3 JSON says. */
TEST(pbjson_decodes_both_name_forms_and_int64_forms)
{
	ProtobufCMessage *m = NULL, *m2 = NULL;
	Querier__V1__SelectSeriesRequest *r;
	char err[256] = "";

	CHECKF(decode("{\"profile_typeID\":\"a:b:c:d:e\",\"labelSelector\":\"{x=\\\"y\\\"}\","
		      "\"start\":1700000000000,\"end\":\"1700000001000\",\"group_by\":[\"env\"],"
		      "\"step\":\"15\",\"aggregation\":\"TIME_SERIES_AGGREGATION_TYPE_AVERAGE\","
		      "\"limit\":null,\"whatever\":{\"a\":[1,2]}}",
		      &m, err, sizeof(err)) == 0,
	       "%s", err);
	r = (Querier__V1__SelectSeriesRequest *)m;
	CHECK_STREQ(r->profile_typeid, "a:b:c:d:e");
	CHECK_STREQ(r->label_selector, "{x=\"y\"}");
	CHECK(r->start == 1700000000000 && r->end == 1700000001000);
	CHECK(r->n_group_by == 1 && !strcmp(r->group_by[0], "env"));
	CHECK(r->step == 15 && r->limit == 0);
	CHECK(r->aggregation == 1);
	/* a field given twice (both name forms): the last one wins, nothing leaks */
	CHECKF(decode("{\"labelSelector\":\"a\",\"label_selector\":\"b\",\"stackTraceSelector\":{"
		      "\"callSite\":[{\"name\":\"main\"}]},\"stack_trace_selector\":{}}",
		      &m2, err, sizeof(err)) == 0,
	       "%s", err);
	r = (Querier__V1__SelectSeriesRequest *)m2;
	CHECK(r->stack_trace_selector && r->stack_trace_selector->n_call_site == 0);
	/* repeated fields too (issue 24, item 3: the first list leaked, 39 MB per
	 * 4 MiB request; LeakSanitizer fails this binary at exit if it comes back) */
	protobuf_c_message_free_unpacked(m2, NULL);
	m2 = NULL;
	CHECKF(decode("{\"group_by\":[\"a\",\"b\"],\"groupBy\":[\"c\"],"
		      "\"stackTraceSelector\":{\"callSite\":[{\"name\":\"x\"}],"
		      "\"call_site\":[{\"name\":\"y\"},{\"name\":\"z\"}]}}",
		      &m2, err, sizeof(err)) == 0,
	       "%s", err);
	r = (Querier__V1__SelectSeriesRequest *)m2;
	CHECK(r->n_group_by == 1 && !strcmp(r->group_by[0], "c"));
	CHECK(r->stack_trace_selector && r->stack_trace_selector->n_call_site == 2 &&
	      !strcmp(r->stack_trace_selector->call_site[1]->name, "z"));
cleanup:
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
	if (m2)
		protobuf_c_message_free_unpacked(m2, NULL);
}

/* Each kind of bad JSON is -EINVAL with a message naming the field or the byte. */
TEST(pbjson_refuses_bad_json_naming_the_problem)
{
	static const struct {
		const char *json, *msg;
	} bad[] = {
	    {"{\"start\":", "malformed JSON"},
	    {"[1]", "not an object"},
	    {"{} x", "malformed JSON"},
	    {"{\"start\":\"12x\"}", "field 'start'"},
	    {"{\"start\":1.5}", "field 'start'"},
	    {"{\"start\":\"9223372036854775808\"}", "out of range"},
	    {"{\"start\":18446744073709551615}", "out of range"},
	    {"{\"group_by\":\"env\"}", "want a list"},
	    {"{\"group_by\":[1]}", "want a string"},
	    {"{\"group_by\":[null]}", "null in a list"},
	    {"{\"aggregation\":\"NOPE\"}", "unknown enum"},
	    {"{\"step\":true}", "want a number"},
	    {"{\"stack_trace_selector\":[]}", "want an object"},
	    /* a list element failing halfway is freed (fuzz_connect_json found the leak) */
	    {"{\"stackTraceSelector\":{\"callSite\":[{\"name\":{}}]}}", "want a string"},
	};
	ProtobufCMessage *m = NULL;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECKF(decode(bad[i].json, &m, err, sizeof(err)) == -EINVAL && !m, "%s",
		       bad[i].json);
		CHECKF(strstr(err, bad[i].msg), "%s: %s", bad[i].json, err);
	}
cleanup:;
}

/* Answers: lowerCamelCase, int64 as strings, defaults left out, nested messages. */
TEST(pbjson_encodes_proto3_json)
{
	Querier__V1__FlameGraph fg = QUERIER__V1__FLAME_GRAPH__INIT;
	Querier__V1__Level l = QUERIER__V1__LEVEL__INIT, *levels[1] = {&l};
	char *names[2] = {"total", "a\"b"};
	int64_t vals[4] = {0, 10, 0, 0};
	struct server_mem m = {0};

	fg.names = names;
	fg.n_names = 2;
	fg.levels = levels;
	fg.n_levels = 1;
	l.values = vals;
	l.n_values = 4;
	fg.max_self = -3;
	CHECK(server_mem__open(&m) == 0);
	CHECK(pbjson_encode(&fg.base, m.f) == 0);
	CHECK(fflush(m.f) == 0);
	CHECK_STREQ(m.buf,
		    "{\"names\":[\"total\",\"a\\\"b\"],\"levels\":[{\"values\":[\"0\",\"10\","
		    "\"0\",\"0\"]}],\"maxSelf\":\"-3\"}");
cleanup:
	if (m.f)
		server_mem__discard(&m);
}

/* A profile type joins a label selector as one more matcher. */
TEST(pyro_selector_adds_the_profile_type)
{
	static const struct {
		const char *type, *ls, *want;
	} cases[] = {
	    {"a:b:c:d:e", "{x=\"1\"}", "{x=\"1\",__profile_type__=\"a:b:c:d:e\"}"},
	    {"a:b:c:d:e", " { } ", "{__profile_type__=\"a:b:c:d:e\"}"},
	    {"a:b:c:d:e", "", "{__profile_type__=\"a:b:c:d:e\"}"},
	    {"a:b:c:d:e", "app{}", "app{__profile_type__=\"a:b:c:d:e\"}"},
	    /* a trailing ',' parses: one ',' before the matcher, not two (fuzz_render) */
	    {"a:b:c:d:e", "{x=\"1\", }", "{x=\"1\",__profile_type__=\"a:b:c:d:e\"}"},
	    {"", "{x=\"1\"}", "{x=\"1\"}"},
	};
	char *out = NULL, err[256];
	int vi;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(pyro_selector(cases[i].type, cases[i].ls, &out, err, sizeof(err)) == 0);
		CHECKF(!strcmp(out, cases[i].want), "%s", out);
		free(out);
		out = NULL;
	}
	CHECK(pyro_selector("a:b:c:d:e", "{x=\"1\"", &out, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "does not end with '}'"));
	CHECK(pyro_query("process_cpu:cpu:nanoseconds:cpu:nanoseconds{a=\"b\"}", &out, &vi, err,
			 sizeof(err)) == 0);
	CHECK(vi == 1 && !strcmp(out, "{a=\"b\",__profile_type__=\"process_cpu:cpu:nanoseconds:"
				      "cpu:nanoseconds\"}"));
	free(out);
	out = NULL;
	CHECK(pyro_query("myapp.cpu{a=\"b\"}", &out, &vi, err, sizeof(err)) == 0);
	CHECK(vi == 0 && !strcmp(out, "myapp.cpu{a=\"b\"}"));
	CHECK(pyro_value_index("process_cpu:samples:count:cpu:nanoseconds") == 0);
	CHECK(pyro_value_index("memory:inuse_space:bytes:space:bytes") == 0);
cleanup:
	free(out);
}

/* "{\"labelSelector\":\"{}\",\"junk\":[{},{},...]}" with n empty objects: an unknown
 * field, ignored once parsed, but json-c's tree of it is 264 bytes per byte. */
static char *empty_objects_request(size_t n)
{
	const char *head = "{\"labelSelector\":\"{}\",\"junk\":[";
	size_t hl = strlen(head), at = hl;
	char *s = malloc(hl + 3 * n + 3);

	if (!s)
		return NULL;
	memcpy(s, head, hl);
	for (size_t i = 0; i < n; i++)
		at += (size_t)sprintf(s + at, "%s{}", i ? "," : "");
	strcpy(s + at, "]}");
	return s;
}

/* Issue 24 (1): a 4 MiB body of [{},...] took ~1 GB. The tree is priced before
 * json-c builds it and refused past half the budget. */
TEST(pbjson_refuses_a_tree_over_its_budget)
{
	ProtobufCMessage *m = NULL;
	char err[512] = "", *json = empty_objects_request(100000); /* 300 KB: ~80 MB of tree */
	size_t len;

	CHECK(json);
	len = strlen(json);
	CHECK(pbjson_decode_budget(&querier__v1__select_series_request__descriptor, json, len,
				   64u << 20, &m, err, sizeof(err)) == -EFBIG);
	CHECKF(!m && strstr(err, "over half of this request's memory budget of 64 MiB"), "%s", err);
	printf("  300 KB of {}: %s\n", err);
	/* the server's own budget for a body this size (102 MiB) refuses it too */
	CHECK(decode(json, &m, err, sizeof(err)) == -EFBIG && !m);
	/* within a budget that holds the tree, the same body decodes */
	CHECKF(pbjson_decode_budget(&querier__v1__select_series_request__descriptor, json, len,
				    256u << 20, &m, err, sizeof(err)) == 0,
	       "%s", err);
	CHECK(m);
cleanup:
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
	free(json);
}
