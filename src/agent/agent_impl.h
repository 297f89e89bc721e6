/*
 * agent internals shared by the files of src/agent/ (not a public header).
 */
#ifndef HEARTH_AGENT_IMPL_H
#define HEARTH_AGENT_IMPL_H

#include <pthread.h>

#include "agent.h"
#include "collect/collect.h"
#include "proc/proc.h"

/* A copy of src with tid dropped and exe/container/unit added per sample. NULL on ENOMEM. */
struct profile *agent_relabel(struct proc_table *pt, const struct profile *src);

/* The sender thread (agent_send.c). */
struct agent_sender;
int agent_sender__start(const struct agent_opts *opts, struct agent_spool *sp,
			struct agent_sender **out);
/* Wakes the sender (something was queued). */
void agent_sender__kick(struct agent_sender *snd);
/* Waits up to flush_s seconds for the spool to empty, then stops the thread (once). */
void agent_sender__stop(struct agent_sender *snd, double flush_s);
/* Stops (without waiting) if still running, and frees. NULL is a no-op. */
void agent_sender__free(struct agent_sender *snd);
/* Failed attempts so far. */
uint64_t agent_sender__failures(struct agent_sender *snd);

#endif
