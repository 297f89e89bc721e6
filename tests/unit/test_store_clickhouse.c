/*
 * The ClickHouse backend without a ClickHouse: every malformed store URL is
 * refused with a sentence naming what is wrong, and a server that is not
 * there is -EHOSTDOWN (HTTP 503), within the URL's timeout. The backend's
 * behaviour against a real server is tested by tests/integration/test_clickhouse*.sh.
 */
#include "unit.h"
#include "store/store.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

TEST(clickhouse_bad_urls_refused)
{
	static const struct {
		const char *url, *says;
	} bad[] = {
	    {"clickhouse://", "no HOST:PORT"},
	    {"clickhouse://host/db", "no HOST:PORT"},
	    {"clickhouse://host:80", "no HOST:PORT"},
	    {"clickhouse://host:http/db", "port is not a number"},
	    {"clickhouse://host:8123/", "database name"},
	    {"clickhouse://host:8123/db;drop", "database name"},
	    {"clickhouse://host:8123/db?cluster=a b", "cluster name"},
	    {"clickhouse://host:8123/db?timeout=0", "timeout"},
	    {"clickhouse://host:8123/db?timeout=x", "timeout"},
	    {"clickhouse://host:8123/db?replicas=2", "unknown parameter"},
	    {"clickhouse://host:8123/db?cluster", "without a value"},
	    {"postgres://host:5432/db", "not a clickhouse:// URL"},
	};
	struct store *s = NULL;
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int e = store__open_clickhouse(bad[i].url, NULL, &s, err, sizeof(err));

		CHECKF(e == -EINVAL && !s, "%s: %d", bad[i].url, e);
		CHECKF(strstr(err, bad[i].says) != NULL, "%s: %s", bad[i].url, err);
	}
	CHECK(store__is_clickhouse("clickhouse://h:1/d") && !store__is_clickhouse("local") &&
	      !store__is_clickhouse(NULL));
cleanup:
	store__close(s);
}

TEST(clickhouse_absent_server_is_hostdown)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct store *s = NULL;
	char url[128], err[512];
	time_t t0;
	int e;

	/* a port nothing listens on: bound, never listened, then closed */
	CHECK(fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	      !getsockname(fd, (struct sockaddr *)&a, &len));
	close(fd);
	snprintf(url, sizeof(url), "clickhouse://127.0.0.1:%d/x?timeout=1", ntohs(a.sin_port));
	t0 = time(NULL);
	e = store__open_clickhouse(url, NULL, &s, err, sizeof(err));
	CHECKF(e == -EHOSTDOWN && !s, "%d: %s", e, err);
	CHECKF(strstr(err, "cannot be reached") != NULL, "%s", err);
	CHECK(time(NULL) - t0 <= 5);
cleanup:
	store__close(s);
}
