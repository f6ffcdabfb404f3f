/*
 * What is failing: a DLQ's dead letters grouped by error class, error code
 * and original topic, each group with its count and when its first and
 * last message were dead-lettered (kretry ui's "failures" view). The
 * grouping is plain data (dlq_groups_add() per message); dlq_groups_read()
 * feeds it from the DLQ reader that dlq inspect uses, bounded in messages
 * read and in groups kept.
 */
#ifndef KRETRY_DLQ_GROUPS_H
#define KRETRY_DLQ_GROUPS_H

#include "dlq_filter.h"
#include "dlq_reader.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define DLQ_GROUPS_MAX 1000 /* groups kept; later ones count as "other" */
#define DLQ_GROUPS_TEXT 256 /* bytes of class, code or topic kept */

typedef struct dlq_groups_s dlq_groups_t;

/* At most @p max_groups groups (1..DLQ_GROUPS_MAX). NULL when memory ran
 * out. */
dlq_groups_t *dlq_groups_new(size_t max_groups);
void dlq_groups_destroy(dlq_groups_t *g);

/* Count one dead letter (@p info borrowed; @p dead_lettered_at as
 * kretry_dlq_dead_lettered_at(), -1 unknown). Returns 0, or -1 when memory
 * ran out. A message of a new group once max_groups exist counts in
 * dlq_groups_other(). */
int dlq_groups_add(dlq_groups_t *g,
                   const kretry_dlq_info_t *info,
                   int64_t dead_lettered_at);

size_t dlq_groups_count(const dlq_groups_t *g);
int64_t dlq_groups_other(const dlq_groups_t *g);

/* The groups, the largest first: [{"class", "code", "original_topic"
 * (null when the header is absent), "count", "first_seen", "last_seen"
 * (epoch ms of the first and last dead-lettered, null when unknown)}].
 * NULL when memory ran out. */
json_t *dlq_groups_json(const dlq_groups_t *g);

/* Group what @p r reads, up to @p max_messages. Returns 1 when the
 * snapshot's end was reached, 0 when it stopped at @p max_messages, -1 on
 * an error (@p errstr filled). *@p read reports the messages read. */
int dlq_groups_read(dlq_reader_t *r,
                    dlq_groups_t *g,
                    int64_t max_messages,
                    int64_t *read,
                    char *errstr,
                    size_t errstr_size);

#endif
