/*
 * libmicrohttpd, opened with dlopen on its first use instead of linked, as libcurl is
 * (curl_lazy.c says why): linked, it and the GnuTLS libraries it needs were relocated at
 * every start of hearth, ~2 ms of CPU, also for the commands that serve nothing
 * (`hearth symbolize`, `record`, `query`). The functions hearth calls are defined here
 * and forward to libmicrohttpd.so.12, loaded once by whichever is called first; the
 * server is unchanged.
 *
 * Without the library, MHD_start_daemon returns NULL (the server reports that it could
 * not start), MHD_is_feature_supported MHD_NO; the others are only reached through a
 * daemon. MHD_start_daemon's options go through MHD_start_daemon_va; the info calls'
 * variadic part is read by none of the info types hearth asks for (libmicrohttpd
 * reserves it), so none is passed on.
 */
#include "base.h"

#include <dlfcn.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>

static struct {
	enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
	struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
							    enum MHD_ResponseMemoryMode);
	void (*destroy_response)(struct MHD_Response *);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *,
							       enum MHD_ConnectionInfoType, ...);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType,
						       ...);
	enum MHD_Result (*is_feature_supported)(enum MHD_FEATURE);
	const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind,
					       const char *);
	enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
					  struct MHD_Response *);
	void (*resume_connection)(struct MHD_Connection *);
	struct MHD_Daemon *(*start_daemon_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback,
					      void *, MHD_AccessHandlerCallback, void *, va_list);
	void (*stop_daemon)(struct MHD_Daemon *);
	void (*suspend_connection)(struct MHD_Connection *);
	bool ok;
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

/* (a data pointer converted to a function pointer: POSIX's dlsym contract) */
#define SYM(h, field) (*(void **)&lib.field = dlsym(h, "MHD_" #field))

static void lib_load(void)
{
	void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	lib.ok = SYM(h, add_response_header) && SYM(h, create_response_from_buffer) &&
		 SYM(h, destroy_response) && SYM(h, get_connection_info) &&
		 SYM(h, get_daemon_info) && SYM(h, is_feature_supported) &&
		 SYM(h, lookup_connection_value) && SYM(h, queue_response) &&
		 SYM(h, resume_connection) && SYM(h, start_daemon_va) && SYM(h, stop_daemon) &&
		 SYM(h, suspend_connection);
	if (!lib.ok)
		dlclose(h);
}

/* Whether libmicrohttpd is there (loaded on the first call). */
static bool loaded(void)
{
	pthread_once(&lib_once, lib_load);
	return lib.ok;
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
				    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	struct MHD_Daemon *d;
	va_list ap;

	if (!loaded())
		return NULL;
	va_start(ap, dh_cls);
	d = lib.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
	va_end(ap);
	return d;
}

enum MHD_Result MHD_is_feature_supported(enum MHD_FEATURE feature)
{
	return loaded() ? lib.is_feature_supported(feature) : MHD_NO;
}

/* The rest are reached only through a daemon: the library is loaded. */

void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
	if (loaded())
		lib.stop_daemon(daemon);
}

const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
						enum MHD_DaemonInfoType info_type, ...)
{
	return loaded() ? lib.get_daemon_info(daemon, info_type) : NULL;
}

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
							enum MHD_ConnectionInfoType info_type, ...)
{
	return loaded() ? lib.get_connection_info(connection, info_type) : NULL;
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
					const char *content)
{
	return loaded() ? lib.add_response_header(response, header, content) : MHD_NO;
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
						     enum MHD_ResponseMemoryMode mode)
{
	return loaded() ? lib.create_response_from_buffer(size, buffer, mode) : NULL;
}

void MHD_destroy_response(struct MHD_Response *response)
{
	if (loaded())
		lib.destroy_response(response);
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
					const char *key)
{
	return loaded() ? lib.lookup_connection_value(connection, kind, key) : NULL;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
				   struct MHD_Response *response)
{
	return loaded() ? lib.queue_response(connection, status_code, response) : MHD_NO;
}

void MHD_resume_connection(struct MHD_Connection *connection)
{
	if (loaded())
		lib.resume_connection(connection);
}

void MHD_suspend_connection(struct MHD_Connection *connection)
{
	if (loaded())
		lib.suspend_connection(connection);
}
