/*
 * kretry ui's history: a bounded ring of the figures the server already
 * takes every interval (ui_figures.c), per topology: the DLQ's size and
 * arrival rate, and each tier's waiting messages and oldest age. It lives
 * in memory only: it survives a reload of the page, not a restart of the
 * server (/metrics and Prometheus keep the long-term history). Plain data:
 * no threads, no Kafka; the caller serialises access.
 */
#ifndef KRETRY_UI_HISTORY_H
#define KRETRY_UI_HISTORY_H

#include "stats_calc.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define UI_HISTORY_TIERS 16 /* tiers kept per sample; more are left out */

typedef struct ui_history_s ui_history_t;

/* A ring of @p capacity samples (>= 1). NULL when memory ran out. */
ui_history_t *ui_history_new(size_t capacity);
void ui_history_destroy(ui_history_t *h);

/* Append @p r's figures, dropping the oldest sample once full. A figure
 * the report does not know is kept as unknown (null in the JSON). */
void ui_history_add(ui_history_t *h, const stats_report_t *r);

size_t ui_history_count(const ui_history_t *h);

/* The samples, oldest first, as columns: {"capacity", "count", "at_ms":
 * [...], "dlq_waiting": [...], "dlq_rate_per_min": [...], "tiers":
 * [{"tier": N, "waiting": [...], "oldest_age_ms": [...]}]}; only samples
 * at or after @p since_ms. NULL when memory ran out. */
json_t *ui_history_json(const ui_history_t *h, int64_t since_ms);

#endif
