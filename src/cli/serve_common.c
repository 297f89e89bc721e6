/*
 * What `hearth server`, `agent` and `run` share: stop on SIGINT/SIGTERM, the
 * bearer token file, the /debug + /metrics listener options, the warning about
 * a listener open beyond loopback without a token, and the private data
 * directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "cli.h"
#include "serve.h"

volatile sig_atomic_t cli_stop;
/* Self-pipe: the handler may run on any thread (HTTP, sender), so a sleeper on
 * the main thread is woken by this pipe becoming readable, not by EINTR. */
static int stop_pipe[2] = {-1, -1};

static void on_stop(int sig)
{
	int saved = errno;

	(void)sig;
	cli_stop = 1;
	if (stop_pipe[1] >= 0 && write(stop_pipe[1], "x", 1) < 0) {
		/* full or closed: a byte is already there, the sleeper wakes anyway */
	}
	errno = saved;
}

void cli_catch_stop_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop};

	if (stop_pipe[0] < 0 && pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK))
		stop_pipe[0] = stop_pipe[1] = -1; /* the sleeper then wakes once a second */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int cli_read_token(const char *cmd, const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f) {
		cli_error(cmd, "--auth-token-file: cannot read '%s': %s", path, strerror(errno));
		return -errno;
	}
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	if (n == 0 || n >= len - 1 || strpbrk(buf, " \t\r\n")) {
		cli_error(cmd,
			  "--auth-token-file: '%s' must hold one token of 1 to %zu characters "
			  "without blanks",
			  path, len - 2);
		return -EINVAL;
	}
	return 0;
}

static double mono_s(void)
{
	return (double)base_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

/* Sleeps until cli_stop, or `seconds` passed: one wait, woken by the stop pipe. */
void cli_sleep_unless_stopped(double seconds)
{
	double until = mono_s() + seconds, left;
	struct pollfd pfd = {.fd = stop_pipe[0], .events = POLLIN};

	while (!cli_stop && (left = until - mono_s()) > 0) {
		if (pfd.fd < 0 && left > 1)
			left = 1; /* no pipe: check the flag once a second */
		poll(pfd.fd >= 0 ? &pfd : NULL, pfd.fd >= 0 ? 1 : 0, (int)(left * 1000) + 1);
	}
}

void cli_listen_url(const char *listen, int port, bool tls, char *buf, size_t len)
{
	const char *colon, *scheme = tls ? "https" : "http";
	int hl;

	if (!listen)
		listen = CLI_DEFAULT_LISTEN;
	colon = strrchr(listen, ':');
	hl = colon ? (int)(colon - listen) : 0;
	if (hl == 0 || !strncmp(listen, "0.0.0.0", (size_t)hl))
		snprintf(buf, len, "%s://127.0.0.1:%d", scheme, port);
	else
		snprintf(buf, len, "%s://%.*s:%d", scheme, hl, listen, port);
}

void cli_warn_exposed(const char *cmd, const char *listen, const char *token, bool tls)
{
	if (server_listen_is_loopback(listen))
		return;
	if (token && !tls)
		fprintf(stderr,
			"hearth %s: note: listening on %s over plain HTTP: the token and the\n"
			"hearth %s: note: profiles cross the network readable; add --tls-cert and\n"
			"hearth %s: note: --tls-key (docs/install.md, \"A fleet\") or a TLS proxy.\n",
			cmd, listen ? listen : CLI_DEFAULT_LISTEN, cmd, cmd);
	if (token)
		return;
	fprintf(stderr,
		"hearth %s: WARNING: listening on %s, beyond loopback, with no --auth-token-file:\n"
		"hearth %s: WARNING: anyone who can reach this port can read every profile, push\n"
		"hearth %s: WARNING: data and start live profiling. Add --auth-token-file FILE,\n"
		"hearth %s: WARNING: or listen on 127.0.0.1.\n",
		cmd, listen ? listen : CLI_DEFAULT_LISTEN, cmd, cmd, cmd);
}

int cli_private_dir(const char *cmd, const char *dir)
{
	struct stat st;

	umask(077); /* the store's files: 0600 (stacks name the machine's code and users) */
	if (!mkdir(dir, 0700))
		return 0;
	if (errno != EEXIST) /* the store's open names the problem */
		return 0;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode) || !(st.st_mode & 077))
		return 0;
	/* made by an older hearth, or by hand: what is inside may be readable */
	if (chmod(dir, st.st_mode & 0700)) {
		cli_error(cmd, "cannot make '%s' private (mode %03o): %s", dir,
			  (unsigned)(st.st_mode & 0777), strerror(errno));
		return -errno;
	}
	fprintf(stderr, "hearth %s: made '%s' private: mode %03o, was %03o\n", cmd, dir,
		(unsigned)(st.st_mode & 0700), (unsigned)(st.st_mode & 0777));
	return 0;
}
