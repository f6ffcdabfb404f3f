/*
 * kretry dlq: what inspect and replay share — their options, the topology
 * they act on, and the rendering of one DLQ message as a table row or a
 * JSON line.
 */
#ifndef KRETRY_CLI_DLQ_H
#define KRETRY_CLI_DLQ_H

#include "dlq_filter.h"
#include "topology.h"

#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>

#define DLQ_DEFAULT_RATE 100
#define DLQ_DEFAULT_BATCH 100
#define DLQ_DEFAULT_TIMEOUT_MS 10000

typedef struct {
        const char *file, *name, *bootstrap;
        kretry_dlq_filter_t filter;
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

/* 1 when @p m passes the filters of @p o. */
int dlq_selected(const dlq_opts_t *o, const rd_kafka_message_t *m);

/* kretry dlq replay, after the options were parsed. Returns an exit
 * status. */
int dlq_replay(const dlq_opts_t *o, const dlq_target_t *tg);

int64_t dlq_now_ms(void);

#endif
