/*
 * Shared by the long-running subcommands (server, agent, run): stop signals,
 * token files, the server's options (serve_common.c, server.c).
 */
#ifndef HEARTH_CLI_SERVE_H
#define HEARTH_CLI_SERVE_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/server.h"
#include "store/store.h"

#define CLI_DEFAULT_DATA   "./hearth-data"
#define CLI_DEFAULT_LISTEN "127.0.0.1:4100"

/* Set by SIGINT/SIGTERM once cli_catch_stop_signals() ran. */
extern volatile sig_atomic_t cli_stop;
void cli_catch_stop_signals(void);
/* Reads a one-token file into buf. 0, or -errno after an error line. */
int cli_read_token(const char *cmd, const char *path, char *buf, size_t len);
void cli_sleep_unless_stopped(double seconds);
/* "http://HOST:PORT" (https:// with tls) for a listen address and the port bound. */
void cli_listen_url(const char *listen, int port, bool tls, char *buf, size_t len);
/* --log-level of server, run and agent (enum server_log_level; the server's lines
 * follow server_opts.log_level, the command's own through cli_info and
 * cli_warn_exposed). SERVER_LOG_INFO until an option sets it. */
extern enum server_log_level cli_log_level;
/* --log-level error|warn|info|debug into *out and cli_log_level. 0, or -EINVAL after
 * an error line. */
int cli_parse_log_level(const char *cmd, const char *arg, enum server_log_level *out);
/* A line on stderr ("hearth CMD: ...", newline added) at --log-level info and debug:
 * the startup lines. */
void cli_info(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Checks a --listen value as the command line is parsed, so a bad one is a usage
 * error (exit 2) before anything starts. 0, or -EINVAL after an error line. */
int cli_check_listen(const char *cmd, const char *listen);
/* A loud stderr warning when listen (NULL: the default) is not loopback-only and
 * no token guards it; a note when a token does but travels without tls. */
void cli_warn_exposed(const char *cmd, const char *listen, const char *token, bool tls);
/* Sets the umask to 077 and makes dir (created 0700 if missing) private: an
 * existing one readable by others is chmod'ed to owner-only, with a note. 0 or
 * -errno after an error line. */
int cli_private_dir(const char *cmd, const char *dir);

struct cli_serve_args {
	const char *data;
	const char *store; /* --store: NULL or "local" (the embedded store in data), or a
			    * clickhouse:// URL (docs/clickhouse.md) */
	struct server_opts so;
	struct store_opts st;
	char token[1024];
	struct scrape_config *scrape_cfg; /* --scrape-config, until cli_serve_open takes it */
	struct scrape *scrape;		  /* its scraper, from cli_serve_open to cli_serve_close */
};
/* One option of the server family (--data --store --listen --retention --auth-token-file
 * --max-body-mb --max-series --max-disk --web-dir --scrape-config --tls-cert --tls-key
 * --log-level). 0 taken, 1 not a server option, -EINVAL after an error. */
int cli_parse_serve_opt(const char *cmd, int c, const char *arg, struct cli_serve_args *a);
/* After the options: refuses what does not go together (--max-disk with a
 * ClickHouse --store). 0, or -EINVAL after an error line. */
int cli_serve_check(const char *cmd, const struct cli_serve_args *a);
/* The long options cli_parse_serve_opt takes (values from 256 up), NULL-terminated. */
extern const struct option cli_serve_long_opts[];
#define CLI_SERVE_N_OPTS 8
/* Opens the store and starts the server (and the scraper of --scrape-config).
 * 0 or -errno after an error line. */
int cli_serve_open(const char *cmd, struct cli_serve_args *a, struct store **st,
		   struct server **srv);
/* Stops the server, then the scraper (the server reads its state), frees what
 * parsing kept; the caller closes the store after. NULL srv is fine. */
void cli_serve_close(struct cli_serve_args *a, struct server *srv);

/* Sampling options of agent and run (-F --interval --transfer --idle --host). */
#include "agent/agent.h"
struct cli_agent_args {
	struct agent_opts ao;
	char token[1024];
};
#define CLI_AGENT_SHORT_OPTS "F:"
/* Long options of cli_parse_agent_opt (values from 300 up; -F is 'F'). */
extern const struct option cli_agent_long_opts[];
/* 0 taken, 1 not an agent sampling option, -EINVAL after an error line. */
int cli_parse_agent_opt(const char *cmd, int c, const char *arg, struct cli_agent_args *a);
void cli_agent_defaults(struct cli_agent_args *a);
/* A size: bytes, or with K, M, G, T (powers of 1024; B or iB may follow). 0 or -EINVAL. */
int cli_parse_mem_size(const char *s, uint64_t *out);
/* Concatenation of two NULL-terminated option tables into out (capacity n). */
void cli_merge_opts(const struct option *a, const struct option *b, struct option *out, size_t n);

#endif
