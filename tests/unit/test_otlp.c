/*
 * otlp_decode (src/profile/otlp_*.c): the protoc-encoded fixture of
 * tests/fuzz/corpus/fuzz_otlp (made from tests/fixtures/otlp/cpu.txtpb) into
 * models and labels; every cut of it fails cleanly or decodes; values of
 * cpu/nanoseconds, deep stacks, the symbolizer callback, label limits.
 */
#include "unit.h"

#include "profile/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fixture's bytes (without the fuzz corpus' leading encoding byte). */
static uint8_t *read_fixture(const char *name, size_t *len)
{
	char path[512];
	uint8_t *buf = NULL;
	long n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/../../fuzz/corpus/fuzz_otlp/%s", unit_data_dir(), name);
	if (!(f = fopen(path, "rb")))
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 1 && fseek(f, 1, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n - 1, f) == (size_t)n - 1)
		*len = (size_t)n - 1;
	else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static const char *label(const struct otlp_series *s, const char *key)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].value;
	return NULL;
}

TEST(otlp_protoc_fixture_stacks_and_labels)
{
	struct otlp_opts o = {0};
	struct otlp_decoded d = {0};
	char err[256], *folded = NULL;
	size_t len = 0;
	uint8_t *buf = read_fixture("cpu.bin", &len);

	CHECK(buf);
	CHECKF(otlp_decode(buf, len, &o, &d, err, sizeof(err)) == 0, "%s", err);
	CHECK(d.n_series == 1 && d.rejected == 0);
	CHECK_STREQ(label(&d.series[0], "service_name"), "shop");
	CHECK_STREQ(label(&d.series[0], "__name__"), "shop");
	CHECK_STREQ(label(&d.series[0], "__profile_type__"), OTLP_CPU_PROFILE_TYPE);
	CHECK_STREQ(label(&d.series[0], "container"), "c0ffee");
	CHECK_STREQ(label(&d.series[0], "host"), "web-1");
	CHECK(!label(&d.series[0], "deployment_environment"));
	folded = unit_folded(d.series[0].profile);
	CHECK_STREQ(folded, "main;work;cold 10\nmain;work;hot 30\n");
	CHECK(profile__total(d.series[0].profile, 1) == 40 * 10000000LL);
	CHECK(profile__time_ns(d.series[0].profile) == 1700000000000000000LL);
cleanup:
	free(folded);
	otlp_decoded__fini(&d);
	free(buf);
}

/* A prefix of a message is often a valid message itself (cut at a field boundary);
 * what matters is that no cut crashes, leaks, or fails without a reason. */
TEST(otlp_every_cut_fails_cleanly)
{
	struct otlp_opts o = {0};
	size_t len = 0, failed = 0;
	uint8_t *buf = read_fixture("cpu.bin", &len);

	CHECK(buf);
	for (size_t n = 0; n < len; n++) {
		struct otlp_decoded d = {0};
		char err[256] = "";
		int r = otlp_decode(buf, n, &o, &d, err, sizeof(err));

		CHECKF(r == 0 || (err[0] && !d.series), "cut at %zu: %d without a reason", n, r);
		failed += r != 0;
		otlp_decoded__fini(&d);
	}
	CHECKF(failed > len / 2, "%zu of %zu cuts failed", failed, len);
cleanup:
	free(buf);
}

/* A JSON request of one profile: sample type (type, unit), period, one sample of
 * value v on a stack of depth frames (location i names function "f<i>"). */
static char *json_request(const char *type, const char *unit, int64_t v, int depth)
{
	size_t cap = 4096 + (size_t)depth * 96, n = 0;
	char *s = malloc(cap);

	if (!s)
		return NULL;
#define PUT(...) (n += (size_t)snprintf(s + n, cap - n, __VA_ARGS__))
	PUT("{\"resourceProfiles\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
	    "\"value\":{\"stringValue\":\"js\"}}]},\"scopeProfiles\":[{\"profiles\":[{"
	    "\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
	    "\"periodType\":{\"typeStrindex\":3,\"unitStrindex\":4},\"period\":\"10000000\","
	    "\"samples\":[{\"stackIndex\":1,\"values\":[\"%" PRId64 "\"]}]}]}]}],"
	    "\"dictionary\":{\"stringTable\":[\"\",\"%s\",\"%s\",\"cpu\",\"nanoseconds\"",
	    v, type, unit);
	for (int i = 0; i < depth; i++)
		PUT(",\"f%d\"", i);
	PUT("],\"functionTable\":[{}");
	for (int i = 0; i < depth; i++)
		PUT(",{\"nameStrindex\":%d}", 5 + i);
	PUT("],\"locationTable\":[{}");
	for (int i = 0; i < depth; i++)
		PUT(",{\"lines\":[{\"functionIndex\":%d}]}", 1 + i);
	PUT("],\"stackTable\":[{},{\"locationIndices\":[");
	for (int i = 0; i < depth; i++)
		PUT("%s%d", i ? "," : "", 1 + i);
	PUT("]}]}}");
#undef PUT
	return s;
}

static int decode_json(const char *json, struct otlp_decoded *d, char *err, size_t errlen)
{
	struct otlp_opts o = {.json = true};

	return otlp_decode((const uint8_t *)json, strlen(json), &o, d, err, errlen);
}

TEST(otlp_cpu_nanoseconds_values)
{
	struct otlp_decoded d = {0};
	struct profile_sample s;
	char err[256], *json = json_request("cpu", "nanoseconds", 50000000, 2);

	CHECK(json);
	CHECKF(decode_json(json, &d, err, sizeof(err)) == 0, "%s", err);
	CHECK(d.n_series == 1 && profile__sample(d.series[0].profile, 0, &s) == 0);
	CHECKF(s.values[0] == 5 && s.values[1] == 50000000, "%" PRId64 " %" PRId64, s.values[0],
	       s.values[1]);
cleanup:
	otlp_decoded__fini(&d);
	free(json);
}

TEST(otlp_other_sample_type_rejected_not_stored)
{
	struct otlp_decoded d = {0};
	char err[256], *json = json_request("alloc_space", "bytes", 4096, 1);

	CHECK(json);
	CHECKF(decode_json(json, &d, err, sizeof(err)) == 0, "%s", err);
	CHECK(d.n_series == 0 && d.rejected == 1 && strstr(d.reject_reason, "alloc_space/bytes"));
cleanup:
	otlp_decoded__fini(&d);
	free(json);
}

TEST(otlp_deep_stack_cut_at_max_frames)
{
	struct otlp_decoded d = {0};
	struct profile_sample s;
	struct profile_location loc;
	struct profile_function fn;
	char err[256], *json = json_request("samples", "count", 1, PROFILE_MAX_FRAMES + 500);

	CHECK(json);
	CHECKF(decode_json(json, &d, err, sizeof(err)) == 0, "%s", err);
	CHECK(profile__sample(d.series[0].profile, 0, &s) == 0);
	CHECKF(s.n_locs == PROFILE_MAX_FRAMES, "%zu frames", s.n_locs);
	CHECK(profile__get_location(d.series[0].profile, s.locs[s.n_locs - 1], &loc) == 0);
	CHECK(profile__get_function(d.series[0].profile, loc.lines[0].function_id, &fn) == 0);
	CHECK_STREQ(fn.name, PROFILE_TRUNCATED_FRAME);
	CHECK(profile__get_location(d.series[0].profile, s.locs[0], &loc) == 0);
	CHECK(profile__get_function(d.series[0].profile, loc.lines[0].function_id, &fn) == 0);
	CHECK_STREQ(fn.name, "f0"); /* the leaf stays */
cleanup:
	otlp_decoded__fini(&d);
	free(json);
}

struct sym_seen {
	char bid[64], file[64];
	uint64_t off;
	int calls;
};

static int fake_symbolize(void *ctx, const char *bid, const char *file, uint64_t off,
			  struct otlp_frame *out, size_t max)
{
	struct sym_seen *seen = ctx;

	seen->calls++;
	snprintf(seen->bid, sizeof(seen->bid), "%s", bid);
	snprintf(seen->file, sizeof(seen->file), "%s", file);
	seen->off = off;
	if (max < 2)
		return 0;
	out[0] = (struct otlp_frame){"inner", "_Z5innerv", "a.c", 3};
	out[1] = (struct otlp_frame){"outer", "outer", "a.c", 9};
	return 2;
}

TEST(otlp_native_frame_symbolized_by_build_id)
{
	static const char json[] =
	    "{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{"
	    "\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
	    "\"samples\":[{\"stackIndex\":1,\"values\":[3]},{\"stackIndex\":2,\"values\":[1]}]}]}]}"
	    "],"
	    "\"dictionary\":{\"stringTable\":[\"\",\"samples\",\"count\",\"/lib/liba.so\","
	    "\"process.executable.build_id.gnu\",\"/lib/libb.so\"],"
	    "\"attributeTable\":[{},{\"keyStrindex\":4,\"value\":{\"stringValue\":\"abcd01\"}}],"
	    "\"mappingTable\":[{},{\"memoryStart\":\"65536\",\"memoryLimit\":\"131072\","
	    "\"fileOffset\":\"4096\",\"filenameStrindex\":3,\"attributeIndices\":[1]},"
	    "{\"memoryStart\":\"65536\",\"memoryLimit\":\"131072\",\"filenameStrindex\":5}],"
	    "\"locationTable\":[{},{\"mappingIndex\":1,\"address\":\"65808\"},"
	    "{\"mappingIndex\":2,\"address\":\"65808\"}],"
	    "\"stackTable\":[{},{\"locationIndices\":[1]},{\"locationIndices\":[2]}]}}";
	struct sym_seen seen = {0};
	struct otlp_opts o = {.json = true, .symbolize = fake_symbolize, .ctx = &seen};
	struct otlp_decoded d = {0};
	char err[256], *folded = NULL;

	CHECKF(otlp_decode((const uint8_t *)json, sizeof(json) - 1, &o, &d, err, sizeof(err)) == 0,
	       "%s", err);
	/* only the frame whose mapping has a build-id is asked about */
	CHECK(seen.calls == 1);
	CHECK_STREQ(seen.bid, "abcd01");
	CHECK_STREQ(seen.file, "/lib/liba.so");
	CHECKF(seen.off == 65808 - 65536 + 4096, "off 0x%" PRIx64, seen.off);
	CHECK(d.frames_symbolized == 1 && d.frames_unsymbolized == 1);
	CHECK_STREQ(label(&d.series[0], "service_name"), OTLP_DEFAULT_SERVICE);
	folded = unit_folded(d.series[0].profile);
	CHECK_STREQ(folded, "libb.so+0x110 1\nouter;inner_[i] 3\n");
cleanup:
	free(folded);
	otlp_decoded__fini(&d);
}

TEST(otlp_bad_requests_name_the_problem)
{
	static const struct {
		const char *json, *want;
		int code;
	} cases[] = {
	    {"{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"samples\":"
	     "[{\"stackIndex\":1,\"values\":[1]}]}]}]}]}",
	     "no dictionary", -EPROTO},
	    {"{\"dictionary\":{\"stringTable\":[\"\"],\"stackTable\":[{},{\"locationIndices\":[7]}]"
	     "}}",
	     "location index 7 is out of range", -EINVAL},
	    {"{\"dictionary\":{\"stringTable\":[\"\"]},\"resourceProfiles\":[{\"scopeProfiles\":"
	     "[{\"profiles\":[{\"samples\":[{\"values\":[1,2]}]}]}]}]}",
	     "has 2 values", -EINVAL},
	    {"{\"dictionary\":{\"attributeTable\":[{\"key\":\"a\"}]}}", "earlier layout", -EPROTO},
	    {"{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"sampleType\":[{}]}]}]}]"
	     "}",
	     "opentelemetry-proto v1.10", -EPROTO},
	    {"{\"dictionary\":{\"stringTable\":[\"\"],\"mappingTable\":[{\"memoryStart\":\"-1\"}]}"
	     "}",
	     "'memoryStart' is not an integer", -EINVAL},
	    {"[]", "the request is not a JSON object", -EINVAL},
	    {"{} {}", "not valid JSON at byte 3", -EINVAL},
	};
	struct otlp_decoded d = {0};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512] = "";
		int r = decode_json(cases[i].json, &d, err, sizeof(err));

		CHECKF(r == cases[i].code && strstr(err, cases[i].want), "case %zu: %d %s", i, r,
		       err);
		CHECK(d.series == NULL);
	}
cleanup:
	otlp_decoded__fini(&d);
}

/* Issue 24 (4): OTLP/JSON's budget took a tree for 16x its text; [{},...] is 264x.
 * A 1 MiB unknown member of empty objects (264 MiB of tree) in a request with a
 * 32 MiB budget passed the old check (1 MiB <= 32 / 16) and is refused now; the
 * same request without it decodes within that budget. */
TEST(otlp_json_tree_priced_against_the_budget)
{
	struct otlp_opts o = {.json = true, .budget = 32u << 20};
	struct otlp_decoded d = {0};
	char err[512] = "", *json = json_request("cpu", "nanoseconds", 50000000, 2), *big = NULL;
	size_t n = 350000, jl, at;

	CHECK(json);
	jl = strlen(json);
	CHECK((big = malloc(jl + 3 * n + 16)));
	at = (size_t)sprintf(big, "{\"junk\":[");
	for (size_t i = 0; i < n; i++)
		at += (size_t)sprintf(big + at, "%s{}", i ? "," : "");
	at += (size_t)sprintf(big + at, "],");
	memcpy(big + at, json + 1, jl); /* the request's members, its '}' and NUL */
	CHECK(otlp_decode((const uint8_t *)big, strlen(big), &o, &d, err, sizeof(err)) == -EFBIG);
	CHECKF(strstr(err, "would take") && strstr(err, "budget of 32 MiB"), "%s", err);
	printf("  %zu bytes of {}: %s\n", strlen(big), err);
	CHECKF(otlp_decode((const uint8_t *)json, jl, &o, &d, err, sizeof(err)) == 0, "%s", err);
	CHECK(d.n_series == 1);
cleanup:
	otlp_decoded__fini(&d);
	free(json);
	free(big);
}

/* A JSON request of `empty` profiles without samples then `full` one-sample CPU
 * profiles (one frame), in one resource; bare: the profiles have nothing but
 * their samples (no type: a small tree for many profiles). */
static char *profiles_request(size_t empty, size_t full, bool bare)
{
	const char *prof = bare ? "{\"period\":\"1\"%s}"
				: "{\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
				  "\"periodType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
				  "\"period\":\"10000000\"%s}";
	const char *samples = ",\"samples\":[{\"stackIndex\":1,\"values\":[\"5\"]}]";
	size_t cap = 1024 + (empty + full) * 256, n = 0;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	n += (size_t)snprintf(s + n, cap - n,
			      "{\"resourceProfiles\":[{\"scopeProfiles\":[{"
			      "\"profiles\":[");
	for (size_t i = 0; i < empty + full; i++) {
		n += (size_t)snprintf(s + n, cap - n, "%s", i ? "," : "");
		n += (size_t)snprintf(s + n, cap - n, prof, i < empty ? "" : samples);
	}
	snprintf(s + n, cap - n,
		 "]}]}],\"dictionary\":{\"stringTable\":[\"\",\"cpu\",\"nanoseconds\",\"f\"],"
		 "\"functionTable\":[{},{\"nameStrindex\":3}],"
		 "\"locationTable\":[{},{\"lines\":[{\"functionIndex\":1}]}],"
		 "\"stackTable\":[{},{\"locationIndices\":[1]}]}}");
	return s;
}

/* Issue 24 (5): 100,000 empty profiles were 100,000 models and stored chunks. They
 * are skipped and counted; the profile with samples is kept, flattened. */
TEST(otlp_empty_profiles_skipped_and_counted)
{
	struct otlp_opts o = {.json = true, .flatten = true};
	struct otlp_decoded d = {0};
	char err[512] = "", *json = profiles_request(1000, 1, false);

	CHECK(json);
	CHECKF(otlp_decode((const uint8_t *)json, strlen(json), &o, &d, err, sizeof(err)) == 0,
	       "%s", err);
	CHECKF(d.n_series == 1 && d.empty == 1000 && d.rejected == 0,
	       "%zu series, %" PRIu64 " empty", d.n_series, d.empty);
	CHECK(d.series[0].flat && !d.series[0].profile && d.series[0].flat->n_samples == 1);
cleanup:
	otlp_decoded__fini(&d);
	free(json);
}

/* Issue 24 (5): what each kept profile holds is counted: 2,000 one-sample profiles
 * (8 MiB at OTLP_PROFILE_COST; their JSON tree ~4 MiB) do not fit a 6 MiB budget,
 * 200 do. */
TEST(otlp_profiles_counted_against_the_budget)
{
	struct otlp_opts o = {.json = true, .flatten = true, .budget = 6u << 20};
	struct otlp_decoded d = {0};
	char err[512] = "", *json = profiles_request(0, 2000, true);

	CHECK(json);
	CHECK(otlp_decode((const uint8_t *)json, strlen(json), &o, &d, err, sizeof(err)) == -EFBIG);
	CHECKF(strstr(err, "2000 profiles with samples"), "%s", err);
	printf("  2000 profiles, 6 MiB: %s\n", err);
	free(json);
	CHECK((json = profiles_request(0, 200, false)));
	CHECKF(otlp_decode((const uint8_t *)json, strlen(json), &o, &d, err, sizeof(err)) == 0,
	       "%s", err);
	CHECK(d.n_series == 200);
cleanup:
	otlp_decoded__fini(&d);
	free(json);
}
