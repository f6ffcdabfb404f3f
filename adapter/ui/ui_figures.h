/*
 * kretry ui's figures, taken in the background: one thread runs
 * stats_collect() (kretry stats) for every topology of the file once per
 * interval, keeps the last result of each and appends it to the
 * topology's history (ui_history.c). GET /api/topologies reads the last
 * result (with its age) instead of taking figures per request, so a page
 * refresh costs nothing and many pages cost the cluster no more than one.
 *
 * Threads: the figures thread writes every slot; requests read them
 * through the functions below (one lock, never held across a cluster
 * call).
 */
#ifndef KRETRY_UI_FIGURES_H
#define KRETRY_UI_FIGURES_H

#include "topology.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define UI_FIGURES_INTERVAL_MS 5000
/* Samples kept per topology: six hours at the interval. */
#define UI_HISTORY_SAMPLES (6 * 3600 * 1000 / UI_FIGURES_INTERVAL_MS)

typedef struct ui_figures_s ui_figures_t;

/* Start taking @p f's figures (borrowed until ui_figures_stop()) every
 * @p interval_ms, with the rate window @p window_ms. NULL when threads or
 * memory ran out. */
ui_figures_t *ui_figures_start(const kretry_topology_file_t *f,
                               const char *bootstrap,
                               int64_t window_ms,
                               int timeout_ms,
                               int64_t interval_ms);

/* Stop (waits for a round in progress) and free; NULL is accepted. */
void ui_figures_stop(ui_figures_t *g);

/* 1 once every topology has a result (or an error). */
int ui_figures_ready(ui_figures_t *g);

/* The last results as GET /api/topologies' "topologies" (each report
 * with "age_ms"), of topology @p name only when not NULL; waits up to
 * @p wait_ms for the first round. *@p computed_at receives when the oldest
 * was taken. NULL with @p errstr filled when a topology's last round
 * failed, or none came in time. */
json_t *ui_figures_reports(ui_figures_t *g,
                           const char *name,
                           int wait_ms,
                           int64_t *computed_at,
                           char *errstr,
                           size_t errstr_size);

/* Topology @p name's history (ui_history_json()) since @p since_ms, with
 * "interval_ms"; NULL when no such topology. */
json_t *ui_figures_history(ui_figures_t *g, const char *name, int64_t since_ms);

#endif
