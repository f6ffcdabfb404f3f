/*
 * Service: a handler job (kretry_job_t): one consumed message with its own
 * view, pooled and reused by workers.c, which owns its life; which of its
 * fields are under kretry_workers_t.lock is said below. Here so that the
 * jobs waiting in a key's gate (keychain.h) can be read below the workers
 * (keyed.c). Polling thread, and the worker in the call.
 */
#ifndef KRETRY_JOB_H
#define KRETRY_JOB_H

#include "codec.h"
#include "handles.h"
#include "keychain.h"
#include "kretry/kretry.h"
#include "msg.h"
#include "part.h"

#include <librdkafka/rdkafka.h>
#include <stdint.h>

typedef struct kretry_job_s {
        kretry_msg_t msg; /* first: the handler's view is the job */
        struct kretry_workers_s *w;
        kretry_part_t *part;     /* a reference (kretry_part_ref) */
        rd_kafka_message_t *rkm; /* owned until decided */
        int64_t bytes;           /* its key and value */
        kretry_gate_t *gate;     /* its key's or partition's, or NULL */
        kretry_action_t action;  /* the handler's answer */
        int64_t us;              /* the handler's duration, -1 unknown */
        avro_value_t value;      /* value.format avro: its own copy of the
                                    decoded record */
        int has_value;
        int slot;               /* in running[], -1 when not running */
        int hold;               /* kretry_msg_hold() during the call */
        kretry_handle_t handle; /* its hold's handle (handles.h), 0 none:
                                   written by the thread in the call, ended
                                   by kretry_msg_complete() or, for a void
                                   hold, when the call returns */
        /* Under lock. */
        int in_call;   /* the handler has not returned yet */
        int completed; /* kretry_msg_complete() during the call */
        int held;      /* returned KRETRY_ASYNC, not completed yet */
        struct kretry_job_s *succ; /* its partition's next job, prepared:
                                      queued as soon as this one returns
                                      OK (ordering=partition) */
        struct kretry_job_s *next;
        /* The polling thread's own: this job's successor and, as one, its
         * predecessor, until the first of the two is decided or dropped. */
        struct kretry_job_s *follow, *pred;
} kretry_job_t;

/* Whether a job of @p src (a source partition) with an offset below
 * @p offset waits in gate @p g (NULL: none): consumed, but not yet placed
 * in the key's chain. */
static inline int kretry_gate_source_waits(const kretry_gate_t *g,
                                           const kretry_part_t *src,
                                           int64_t offset) {
        for (const kretry_job_t *j = g ? g->head : NULL; j; j = j->next)
                if (j->part == src && j->rkm->offset < offset)
                        return 1;
        return 0;
}

#endif
