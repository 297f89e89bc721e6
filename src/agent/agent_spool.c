/*
 * The agent's spool: encoded profiles waiting for the server, oldest first.
 * New entries go to memory; when memory passes its bound the oldest memory
 * entries move to files in the spool directory (when there is one); when the
 * disk part passes its bound — or memory, without a directory — the oldest
 * entry is dropped and counted. Files left by a previous run are reloaded, so
 * a restart of the agent loses nothing that reached the disk.
 *
 * Every entry has an id (its sequence number). The sender peeks an entry, sends
 * it without the lock, then pops that id: a push that dropped the entry in the
 * meantime makes the pop a no-op instead of removing the next, unsent, entry.
 *
 * Memory keeps its bound even when the disk fails: an entry that cannot be
 * written is dropped (oldest first) and counted as a drop and a disk error,
 * rather than kept in memory without limit. A file counts as spooled only once
 * it is durable: written under a temporary name, fsynced, renamed, and the
 * directory fsynced (a crash leaves either no file or a whole one).
 *
 * File format: "hearth-spool 1\n" QUERY "\n" then the pprof bytes; names
 * spool-<20-digit seq>.bin so that sorting by name is sorting by age.
 */
#include "agent_impl.h"
#include "base/base.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPOOL_PREFIX "hearth-spool "
#define SPOOL_MAGIC  SPOOL_PREFIX "1\n"

int (*agent_spool_fsync)(int fd) = fsync;

struct spool_entry {
	struct spool_entry *next;
	uint64_t seq;
	char *query;   /* owned */
	uint8_t *data; /* owned; NULL when the entry lives on disk */
	size_t len;    /* bytes of data (file size for disk entries) */
};

struct agent_spool {
	pthread_mutex_t lock;
	char *dir; /* owned, may be NULL */
	size_t mem_cap, disk_cap, mem_bytes, disk_bytes;
	struct spool_entry *head, *tail; /* oldest first; disk entries precede memory ones */
	uint64_t next_seq;
	struct agent_spool_stats st;
	size_t charged; /* memory entries' bytes charged to MEM_SPOOL */
};

/* Charges what the memory entries hold now (under sp->lock). */
static void charge_sync(struct agent_spool *sp)
{
	mem_budget__charge(MEM_SPOOL, (int64_t)sp->mem_bytes - (int64_t)sp->charged);
	sp->charged = sp->mem_bytes;
}

static void entry_path(const struct agent_spool *sp, uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "%s/spool-%020llu.bin", sp->dir, (unsigned long long)seq);
}

static void entry_free(struct spool_entry *e)
{
	if (!e)
		return;
	free(e->query);
	free(e->data);
	free(e);
}

/* Unlinks e (prev is the entry before it, NULL for the head) and its file. */
static void remove_entry(struct agent_spool *sp, struct spool_entry *prev, struct spool_entry *e)
{
	char path[4096];

	if (prev)
		prev->next = e->next;
	else
		sp->head = e->next;
	if (sp->tail == e)
		sp->tail = prev;
	if (e->data) {
		sp->mem_bytes -= e->len;
	} else {
		sp->disk_bytes -= e->len;
		sp->st.on_disk--;
		entry_path(sp, e->seq, path, sizeof(path));
		unlink(path);
	}
	sp->st.queued--;
	sp->st.queued_bytes -= e->len;
	entry_free(e);
}

/* Unlinks the oldest entry (and its file). */
static void drop_head(struct agent_spool *sp)
{
	if (sp->head)
		remove_entry(sp, NULL, sp->head);
}

/* The entry with id `seq`, and the one before it in *prev; NULL if gone. */
static struct spool_entry *find_entry(struct agent_spool *sp, uint64_t seq,
				      struct spool_entry **prev)
{
	*prev = NULL;
	for (struct spool_entry *e = sp->head; e; *prev = e, e = e->next)
		if (e->seq == seq)
			return e;
	return NULL;
}

/* fsyncs a directory so that a rename in it survives a crash. 0 or -errno. */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (agent_spool_fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

/* Writes "magic query\n data" to tmp and fsyncs it. 0 or -errno. */
static int write_synced(const char *tmp, const struct spool_entry *e)
{
	FILE *f = fopen(tmp, "we");
	int ret = 0;

	if (!f)
		return -errno;
	if (fprintf(f, SPOOL_MAGIC "%s\n", e->query) < 0 ||
	    fwrite(e->data, 1, e->len, f) != e->len || fflush(f))
		ret = -EIO;
	else if (agent_spool_fsync(fileno(f)))
		ret = errno ? -errno : -EIO;
	if (fclose(f) && !ret)
		ret = -EIO;
	return ret;
}

/* Writes a memory entry durably to its file and frees its data. 0 or -errno;
 * on failure no file is left and the entry stays in memory. */
static int to_disk(struct agent_spool *sp, struct spool_entry *e)
{
	char path[4096], tmp[4200];
	int ret;

	entry_path(sp, e->seq, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((ret = write_synced(tmp, e)) || (rename(tmp, path) && (ret = -errno))) {
		unlink(tmp);
		return ret;
	}
	if ((ret = sync_dir(sp->dir))) {
		unlink(path); /* the rename may not survive a crash: not spooled */
		return ret;
	}
	sp->mem_bytes -= e->len;
	sp->disk_bytes += e->len;
	sp->st.on_disk++;
	free(e->data);
	e->data = NULL;
	return 0;
}

/* Enforces the bounds: the oldest memory entry moves to disk while memory is
 * over its bound, after the oldest disk entries make room for it; an entry that
 * cannot go to disk (none, too big, write failed) is dropped. Every pass removes
 * one memory entry, so this ends. */
static void enforce(struct agent_spool *sp)
{
	while (sp->mem_bytes > sp->mem_cap) {
		struct spool_entry *prev = NULL, *e = sp->head;

		while (e && !e->data) { /* disk entries precede memory ones */
			prev = e;
			e = e->next;
		}
		if (!e)
			break; /* not reached: mem_bytes > 0 means a memory entry */
		if (sp->dir && e->len <= sp->disk_cap) {
			while (sp->disk_bytes + e->len > sp->disk_cap && sp->head != e) {
				if (prev == sp->head)
					prev = NULL;
				sp->st.dropped++;
				drop_head(sp);
			}
			if (to_disk(sp, e) == 0)
				continue;
			sp->st.disk_errors++;
		}
		sp->st.dropped++;
		remove_entry(sp, prev, e);
	}
}

static void append(struct agent_spool *sp, struct spool_entry *e)
{
	if (sp->tail)
		sp->tail->next = e;
	else
		sp->head = e;
	sp->tail = e;
	sp->st.queued++;
	sp->st.queued_bytes += e->len;
}

int agent_spool__push(struct agent_spool *sp, const char *query, const uint8_t *data, size_t len)
{
	struct spool_entry *e = calloc(1, sizeof(*e));

	if (!e || !(e->query = strdup(query)) || !(e->data = malloc(len ? len : 1))) {
		entry_free(e);
		return -ENOMEM;
	}
	memcpy(e->data, data, len);
	e->len = len;
	pthread_mutex_lock(&sp->lock);
	e->seq = sp->next_seq++;
	append(sp, e);
	sp->mem_bytes += len;
	enforce(sp);
	charge_sync(sp);
	pthread_mutex_unlock(&sp->lock);
	return 0;
}

/* Reads a spool file into query/data. 0, -EINVAL when it is not a spool file, or
 * -errno. */
static int read_file(const char *path, char **query, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "r");
	char magic[32], *q = NULL;
	size_t qcap = 0;
	ssize_t ql;
	long start, end;
	int ret;

	*query = NULL;
	*data = NULL;
	if (!f)
		return -errno;
	if (!fgets(magic, sizeof(magic), f) || strcmp(magic, SPOOL_MAGIC) ||
	    (ql = getline(&q, &qcap, f)) <= 0) {
		ret = -EINVAL;
		goto cleanup;
	}
	q[ql - 1] = '\0';
	if ((start = ftell(f)) < 0 || fseek(f, 0, SEEK_END) || (end = ftell(f)) < start ||
	    fseek(f, start, SEEK_SET)) {
		ret = -EIO;
		goto cleanup;
	}
	*len = (size_t)(end - start);
	if (!(*data = malloc(*len ? *len : 1))) {
		ret = -ENOMEM;
		goto cleanup;
	}
	ret = fread(*data, 1, *len, f) == *len ? 0 : -EIO;
cleanup:
	fclose(f);
	if (ret) {
		free(q);
		free(*data);
		*data = NULL;
	} else {
		*query = q;
	}
	return ret;
}

int agent_spool__peek(struct agent_spool *sp, uint64_t *id, char **query, uint8_t **data,
		      size_t *len)
{
	char path[4096];
	int ret = 0;

	pthread_mutex_lock(&sp->lock);
	while (sp->head && !sp->head->data) {
		entry_path(sp, sp->head->seq, path, sizeof(path));
		ret = read_file(path, query, data, len);
		if (ret == 0)
			break;
		sp->st.dropped++; /* unreadable file: nothing to retry */
		drop_head(sp);
	}
	if (!sp->head) {
		ret = -ENOENT;
	} else {
		*id = sp->head->seq;
	}
	if (sp->head && sp->head->data) {
		*query = strdup(sp->head->query);
		*data = malloc(sp->head->len ? sp->head->len : 1);
		*len = sp->head->len;
		ret = (*query && *data) ? 0 : -ENOMEM;
		if (!ret)
			memcpy(*data, sp->head->data, *len);
	}
	pthread_mutex_unlock(&sp->lock);
	if (ret && ret != -ENOENT) {
		free(*query);
		free(*data);
	}
	return ret;
}

int agent_spool__pop(struct agent_spool *sp, uint64_t id, bool sent)
{
	struct spool_entry *prev, *e;
	int ret = -ENOENT;

	pthread_mutex_lock(&sp->lock);
	/* counted even when a push dropped the entry meanwhile: the server has it (or
	 * refused it); it was also counted as dropped then */
	if (sent)
		sp->st.sent++;
	else
		sp->st.rejected++;
	if ((e = find_entry(sp, id, &prev))) {
		remove_entry(sp, prev, e);
		ret = 0;
	}
	charge_sync(sp);
	pthread_mutex_unlock(&sp->lock);
	return ret;
}

void agent_spool__stats(struct agent_spool *sp, struct agent_spool_stats *out)
{
	pthread_mutex_lock(&sp->lock);
	*out = sp->st;
	pthread_mutex_unlock(&sp->lock);
}

/* True for "spool-*.bin.tmp": a write that a crash cut short before its rename. */
static bool is_temp_name(const char *name)
{
	size_t n = strlen(name);

	return !strncmp(name, "spool-", 6) && n > 14 && !strcmp(name + n - 8, ".bin.tmp");
}

/* Queues the files a previous run left, oldest first; removes half-written ones. */
static int reload(struct agent_spool *sp)
{
	struct dirent **names = NULL;
	int n = scandir(sp->dir, &names, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		unsigned long long seq;
		char path[4096], tail[8];
		struct stat st;
		struct spool_entry *e;

		if (is_temp_name(names[i]->d_name)) {
			snprintf(path, sizeof(path), "%s/%s", sp->dir, names[i]->d_name);
			unlink(path); /* never counted as spooled: nothing is lost */
		} else if (sscanf(names[i]->d_name, "spool-%20llu.%4s", &seq, tail) == 2 &&
			   !strcmp(tail, "bin") && (e = calloc(1, sizeof(*e)))) {
			snprintf(path, sizeof(path), "%s/%s", sp->dir, names[i]->d_name);
			e->seq = seq;
			e->query = strdup("");
			e->len = stat(path, &st) ? 0 : (size_t)st.st_size;
			append(sp, e);
			sp->disk_bytes += e->len;
			sp->st.on_disk++;
			if (seq >= sp->next_seq)
				sp->next_seq = seq + 1;
		}
		free(names[i]);
	}
	free(names);
	return n < 0 ? -errno : 0;
}

int agent_spool_check_format(const char *dir, char *err, size_t errlen)
{
	struct dirent **names = NULL;
	int n = dir ? scandir(dir, &names, NULL, alphasort) : 0, ret = 0;

	for (int i = 0; i < n; i++) {
		char path[4096], head[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (!ret && !strncmp(names[i]->d_name, "spool-", 6) && (f = fopen(path, "r"))) {
			/* a file without the prefix is damaged, not newer: reload drops it */
			if (fgets(head, sizeof(head), f) && !strncmp(head, SPOOL_PREFIX, 13) &&
			    strcmp(head, SPOOL_MAGIC)) {
				head[strcspn(head, "\n")] = '\0';
				snprintf(
				    err, errlen,
				    "spool file %s has format version %s, not the version 1 "
				    "this hearth reads: send it with the hearth that wrote it, "
				    "or move it out of the spool directory",
				    path, head + 13);
				ret = -EPROTO;
			}
			fclose(f);
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

/* mkdir -p, mode 0700 for what it creates. 0 or -errno. */
static int make_dirs(const char *dir)
{
	char path[4096];

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, 0700) && errno != EEXIST ? -errno : 0;
}

int agent_spool__new(const char *dir, size_t mem_bytes, size_t disk_bytes, struct agent_spool **out)
{
	struct agent_spool *sp = calloc(1, sizeof(*sp));
	int ret = 0;

	*out = NULL;
	if (!sp)
		return -ENOMEM;
	pthread_mutex_init(&sp->lock, NULL);
	sp->mem_cap = mem_bytes;
	sp->disk_cap = disk_bytes;
	sp->next_seq = 1;
	mem_budget__register(MEM_SPOOL, 1, agent_spool_evict, sp);
	if (dir) {
		if (!(sp->dir = strdup(dir)))
			ret = -ENOMEM;
		else if (!(ret = make_dirs(dir)))
			ret = reload(sp);
	}
	if (ret) {
		agent_spool__free(sp);
		return ret;
	}
	*out = sp;
	return 0;
}

/* The MEM_SPOOL evictor: the oldest memory entries go to disk (dropped, and
 * counted so, without a spool directory) until want bytes are freed. */
uint64_t agent_spool_evict(void *ctx, uint64_t want)
{
	struct agent_spool *sp = ctx;
	size_t before, cap;
	uint64_t dropped0, freed;

	pthread_mutex_lock(&sp->lock);
	before = sp->mem_bytes;
	cap = sp->mem_cap;
	dropped0 = sp->st.dropped;
	sp->mem_cap = want >= before ? 0 : before - (size_t)want;
	enforce(sp);
	sp->mem_cap = cap;
	freed = before - sp->mem_bytes;
	charge_sync(sp);
	if (freed)
		mem_budget__evicted(MEM_SPOOL, 1 + (sp->st.dropped - dropped0), freed);
	pthread_mutex_unlock(&sp->lock);
	return freed;
}

/* Frees the spool; memory entries are written to disk first when there is a directory. */
void agent_spool__free(struct agent_spool *sp)
{
	if (!sp)
		return;
	mem_budget__unregister(agent_spool_evict, sp);
	for (struct spool_entry *e = sp->head; e; e = e->next)
		if (e->data && sp->dir && sp->disk_bytes + e->len <= sp->disk_cap)
			to_disk(sp, e);
	while (sp->head) {
		struct spool_entry *e = sp->head;

		sp->head = e->next;
		entry_free(e); /* files stay for the next run */
	}
	mem_budget__charge(MEM_SPOOL, -(int64_t)sp->charged);
	pthread_mutex_destroy(&sp->lock);
	free(sp->dir);
	free(sp);
}
