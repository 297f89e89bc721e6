/*
 * What `hearth server`, `agent` and `run` share: stop on SIGINT/SIGTERM, the
 * bearer token file, the /debug + /metrics listener options, the warning about
 * a listener open beyond loopback without a token, and the private data
 * directory.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "serve.h"

volatile sig_atomic_t cli_stop;

static void on_stop(int sig)
{
	(void)sig;
	cli_stop = 1;
}

void cli_catch_stop_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop};

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

/* Sleeps in small steps until cli_stop, or `seconds` passed. */
void cli_sleep_unless_stopped(double seconds)
{
	struct timespec ts = {0, 100 * 1000000};

	for (double t = 0; t < seconds && !cli_stop; t += 0.1)
		nanosleep(&ts, NULL);
}

void cli_listen_url(const char *listen, int port, char *buf, size_t len)
{
	const char *colon;
	int hl;

	if (!listen)
		listen = CLI_DEFAULT_LISTEN;
	colon = strrchr(listen, ':');
	hl = colon ? (int)(colon - listen) : 0;
	if (hl == 0 || !strncmp(listen, "0.0.0.0", (size_t)hl))
		snprintf(buf, len, "http://127.0.0.1:%d", port);
	else
		snprintf(buf, len, "http://%.*s:%d", hl, listen, port);
}

void cli_warn_exposed(const char *cmd, const char *listen, const char *token)
{
	if (token || server_listen_is_loopback(listen))
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
