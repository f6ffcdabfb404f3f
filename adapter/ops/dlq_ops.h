/*
 * The DLQ operations of kretry's front-ends (kretry dlq, kretry ui): what a
 * query selects, one message as JSON, the replay and the export. No
 * printing and no option parsing: results and errors are returned, a
 * replay's progress is reported through its callback. Messages come from
 * dlq_reader.h.
 */
#ifndef KRETRY_OPS_DLQ_H
#define KRETRY_OPS_DLQ_H

#include "dlq_filter.h"
#include "topology.h"

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdatomic.h>
#include <stdint.h>

#define DLQ_DEFAULT_RATE 100
#define DLQ_DEFAULT_BATCH 100
#define DLQ_DEFAULT_TIMEOUT_MS 10000

/* One DLQ message by its position. */
typedef struct {
        int32_t partition;
        int64_t offset;
} dlq_row_t;

typedef struct {
        const char *file, *name, *bootstrap;
        kretry_dlq_filter_t filter;
        /* When set, only these messages are selected (and the filter must
         * match them too): the rows an operator picked in kretry ui. */
        const dlq_row_t *rows;
        size_t row_cnt;
        int64_t limit; /* inspect: rows at most, 0: all */
        int show_value;
        int json;
        int timeout_ms;
        /* replay */
        const char *to;
        double rate;
        int batch;
        int64_t pause_ms;
        int64_t max; /* 0: no limit */
        int dry_run;
        int restart;
} dlq_opts_t;

/* The topology's file and the chosen topology, loaded once. */
typedef struct {
        kretry_topology_file_t *f;
        const kretry_topology_t *t;
} dlq_target_t;

/* One inspect filter by its name without dashes (class, code, key,
 * since, until) into @p o; @p v is borrowed. Returns 0; -1 with the reason
 * in @p errstr for a time that does not parse; -2 for another name. */
int dlq_filter_set(dlq_opts_t *o,
                   const char *name,
                   const char *v,
                   char *errstr,
                   size_t errstr_size);

/* 1 when @p m passes the filters of @p o. */
int dlq_selected(const dlq_opts_t *o, const rd_kafka_message_t *m);

/* What a replay reports as it goes (dlq_replay_ctl_t.event_cb). */
typedef enum {
        DLQ_REPLAY_STARTED,  /* the DLQ is open: reading begins */
        DLQ_REPLAY_LISTED,   /* dry run: the message would be replayed */
        DLQ_REPLAY_PROGRESS, /* the counters moved, or time passed in a
                              * pause between batches */
        DLQ_REPLAY_ENDED     /* done, stopped or failed: nothing follows */
} dlq_replay_event_t;

/* A replay watched and stopped by its caller, from any thread (kretry ui)
 * or a signal handler (kretry dlq replay). The replaying thread writes the
 * counters, error, target and group; any thread reads the atomics and sets
 * stop. */
typedef struct dlq_replay_ctl_s {
        atomic_int stop;       /* stop after the message in hand */
        atomic_llong total;    /* messages in the DLQ from the resume point */
        atomic_llong read;     /* read so far */
        atomic_llong replayed; /* replayed (dry run: would be) so far */
        char error[512];       /* why it failed, "" otherwise; final once
                                * dlq_replay_run() returned */
        /* Set by the caller, NULL for none: called on the replaying
         * thread with the message (LISTED only; borrowed until the
         * callback returns) and @p opaque. It must not block: the
         * producer's delivery reports wait meanwhile. */
        void (*event_cb)(struct dlq_replay_ctl_s *ctl,
                         dlq_replay_event_t ev,
                         const rd_kafka_message_t *m,
                         void *opaque);
        void *opaque;
        /* Set before DLQ_REPLAY_STARTED: the topic replayed to and the
         * group its progress is committed under. */
        const char *target;
        char group[512];
} dlq_replay_ctl_t;

/*
 * The replay of kretry dlq replay and kretry ui (see dlq_replay.c),
 * reporting to @p ctl (required; zeroed but for event_cb and opaque).
 * Returns 0 when done or stopped, 1 on a failure (its reason in
 * ctl->error), 2 when o->to is not a target of the topology.
 */
int dlq_replay_run(const dlq_opts_t *o,
                   const dlq_target_t *tg,
                   dlq_replay_ctl_t *ctl);

/* How many messages the selection of @p o (filter, rows) matches before
 * the resume point of a replay that does not restart (the progress under
 * "<group>.kretry-replay"): messages an earlier replay replayed or
 * skipped, which the next one will not read. Returns the count, or -1
 * with @p errstr filled. Reads the DLQ up to the resume point. */
int64_t dlq_replay_before_resume(const dlq_opts_t *o,
                                 const dlq_target_t *tg,
                                 char *errstr,
                                 size_t errstr_size);

/* o->to's tier: 0 for the source (also when NULL), N for tier:N or the
 * tier's topic name, -1 when it is not a topic of @p t's chain. */
int dlq_replay_tier(const char *to, const kretry_topology_t *t);

/* The DLQ message @p m as inspect --output json shows it (free with
 * json_decref()); @p info is decoded from its headers. */
json_t *dlq_message_json(const rd_kafka_message_t *m,
                         const kretry_dlq_info_t *info,
                         int show_value,
                         int64_t now_ms);

/* Bytes @p p as @p name in @p o: a string when they are UTF-8 without
 * NUL, else "<name>_hex"; NULL as null. */
void dlq_json_bytes(json_t *o, const char *name, const void *p, size_t n);

/* kretry dlq export's file: the messages @p o selects (at most o->limit)
 * as an Avro object container file at @p path, written beside it and
 * renamed when complete; without @p values every value is null. Returns 0
 * with *@p written and *@p read (messages read from the DLQ) set, or 1
 * with the reason in @p errstr. */
int dlq_export_file(const dlq_opts_t *o,
                    const dlq_target_t *tg,
                    const char *path,
                    const char *codec,
                    int values,
                    int64_t *written,
                    int64_t *read,
                    char *errstr,
                    size_t errstr_size);

/* Milliseconds since the epoch (the wall clock: ages, --since). */
int64_t dlq_now_ms(void);

#endif
