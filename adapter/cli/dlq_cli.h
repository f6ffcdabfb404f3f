/*
 * kretry dlq: what inspect and replay share — their options, the topology
 * they act on, and the rendering of one DLQ message as a table row or a
 * JSON line.
 */
#ifndef KRETRY_CLI_DLQ_H
#define KRETRY_CLI_DLQ_H

#include "dlq_filter.h"
#include "topology.h"

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

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

/* Load @p o's topology file into @p tg (its error diagnostics on stderr)
 * and pick the topology: the one named by --name, else the file's only
 * one. Returns 0 with both set; 1 when the file did not load; 2 when no
 * topology was picked (tg->f set, tg->t NULL: the caller says why, and
 * frees tg->f in every case). */
int dlq_load_target(const dlq_opts_t *o, dlq_target_t *tg);

/* Column headings of the table. */
void dlq_print_heading(FILE *out, int show_value);

/* One message as a table row, or with @p json as one JSON object on its own
 * line. */
void dlq_print_message(FILE *out,
                       const rd_kafka_message_t *m,
                       const dlq_opts_t *o,
                       int64_t now_ms);

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

/* kretry dlq replay, after the options were parsed: dlq_replay_run()
 * stopped by SIGINT/SIGTERM, with a dry run's listing and a summary on
 * stdout. Returns an exit status. */
int dlq_replay(const dlq_opts_t *o, const dlq_target_t *tg);

/* A replay watched and stopped from another thread (kretry ui). The
 * replaying thread writes the counters and error; any thread reads them
 * and sets stop. */
typedef struct {
        atomic_int stop;       /* stop after the message in hand */
        atomic_llong total;    /* messages in the DLQ from the resume point */
        atomic_llong read;     /* read so far */
        atomic_llong replayed; /* replayed (dry run: would be) so far */
        int quiet;             /* no dry-run listing, no progress line */
        char error[512];       /* why it failed, "" otherwise; final once
                                * dlq_replay_run() returned */
} dlq_replay_ctl_t;

/*
 * The replay of kretry dlq replay (see dlq_replay.c): @p ctl may be NULL.
 * Returns 0 when done or stopped, 1 on a failure (said on stderr and in
 * ctl->error), KRETRY_EX_USAGE when o->to is not a target of the
 * topology.
 */
int dlq_replay_run(const dlq_opts_t *o,
                   const dlq_target_t *tg,
                   dlq_replay_ctl_t *ctl);

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
 * with *@p written set, or 1 after saying why on stderr and in
 * @p errstr. */
int dlq_export_file(const dlq_opts_t *o,
                    const dlq_target_t *tg,
                    const char *path,
                    const char *codec,
                    int values,
                    int64_t *written,
                    char *errstr,
                    size_t errstr_size);

int64_t dlq_now_ms(void);

#endif
