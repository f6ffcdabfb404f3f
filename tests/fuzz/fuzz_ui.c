/*
 * Fuzz target: what kretry ui reads from a request. The input is taken
 * whole as a POST /api/replay body (JSON, read into dlq replay's options
 * against a fixed topology), and each of its lines as a page cursor, a
 * message path, a job path, a listen address, a Host, an Origin and a
 * token.
 */
#include "topology.h"
#include "ui_body.h"
#include "ui_http.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char topology_yaml[] = "topologies:\n"
                                    "  - name: orders\n"
                                    "    source: orders\n"
                                    "    group: g\n"
                                    "    retry: { tiers: [1s, 10s] }\n";

static const kretry_topology_t *topology(void) {
        static kretry_topology_file_t *f;
        if (!f) {
                kretry_diags_t d;
                kretry_diags_init(&d);
                f = kretry_topology_file_parse(topology_yaml,
                                               sizeof(topology_yaml) - 1,
                                               "fuzz.yaml", &d);
                kretry_diags_clear(&d);
                if (!f)
                        abort();
        }
        return kretry_topology_at(f, 0);
}

static void body(const uint8_t *data, size_t size) {
        char err[512];
        dlq_opts_t o;
        dlq_row_t *rows;
        json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES,
                               NULL);
        if (!j)
                return;
        memset(&o, 0, sizeof(o));
        kretry_dlq_filter_init(&o.filter);
        int rc = ui_replay_body(j, topology(), &o, &rows, err, sizeof(err));
        if (rc == 0 && o.row_cnt && (!rows || o.rows != rows))
                abort(); /* rows accepted but not where they were said */
        if (rc == 0 && o.to && dlq_replay_tier(o.to, topology()) < 0)
                abort(); /* a target outside the topology accepted */
        free(rows);
        json_decref(j);
}

static void line(const char *s) {
        int32_t p;
        int64_t o, id;
        int stop;
        ui_listen_t l;
        char err[256];
        if (!ui_parse_cursor(s, &p, &o) && (p < 0 || o < 0))
                abort();
        ui_parse_message_path(s, &p, &o);
        if (!ui_parse_job_path(s, &id, &stop) && id < 1)
                abort();
        if (!ui_listen_parse(s, &l, err, sizeof(err)) &&
            (l.port < 0 || l.port > 65535))
                abort();
        ui_host_is_loopback(s, 8642);
        ui_cross_origin(s, s, "127.0.0.1:8642");
        ui_token_equal(s, "0123456789abcdef");
        ui_request_token(s, s);
        /* a Content-Type it accepts is the media type and parameters */
        if (ui_media_type_is(s, "application/json") &&
            strncasecmp(s, "application/json", 16))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        body(data, size);
        char *copy = malloc(size + 1);
        if (!copy)
                return 0;
        memcpy(copy, data, size);
        copy[size] = '\0';
        for (char *s = copy, *nl; s; s = nl ? nl + 1 : NULL) {
                nl = strchr(s, '\n');
                if (nl)
                        *nl = '\0';
                line(s);
        }
        free(copy);
        return 0;
}
