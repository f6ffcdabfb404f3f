/*
 * kretry ui: what a POST /api/replay body asks for, as kretry dlq replay's
 * options. Plain data: no server, no Kafka (tests/fuzz/fuzz_ui.c feeds it
 * anything).
 */
#ifndef KRETRY_UI_BODY_H
#define KRETRY_UI_BODY_H

#include "dlq_ops.h"

#include <jansson.h>

/* One inspect filter (class, code, key, since, until) into @p o; @p v is
 * borrowed. Returns 0, or -1 with @p errstr filled. */
int ui_filter_set(dlq_opts_t *o,
                  const char *name,
                  const char *v,
                  char *errstr,
                  size_t errstr_size);

/*
 * The fields of @p body (filter, rows, to, rate, batch, max, dry_run,
 * restart; "topology" is the caller's) into @p o, which the caller
 * initialised, for topology @p t. Strings in @p o borrow from @p body;
 * *@p rows receives the chosen rows (NULL when none; free() it in every
 * case). Returns 0; -1 with @p errstr filled when the body is wrong (a
 * 400: a field unknown, of the wrong type, out of bounds, a target outside
 * the topology); -2 when memory ran out.
 */
int ui_replay_body(json_t *body,
                   const kretry_topology_t *t,
                   dlq_opts_t *o,
                   dlq_row_t **rows,
                   char *errstr,
                   size_t errstr_size);

#endif
