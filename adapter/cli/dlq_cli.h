/*
 * kretry dlq: what inspect, replay and export share on the command line —
 * the topology they act on, and the rendering of one DLQ message as a
 * table row or a JSON line. The operations themselves are dlq_ops.h's.
 */
#ifndef KRETRY_CLI_DLQ_H
#define KRETRY_CLI_DLQ_H

#include "dlq_ops.h"

#include <stdio.h>

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

/* kretry dlq replay, after the options were parsed: dlq_replay_run()
 * stopped by SIGINT/SIGTERM, with a dry run's listing and a summary on
 * stdout (cmd_dlq_replay.c). Returns an exit status. */
int dlq_replay(const dlq_opts_t *o, const dlq_target_t *tg);

#endif
