/*
 * http_bench: kretry run --http's path (adapter -> held message -> libcurl
 * multi thread -> server -> completion) against a raw libcurl multi loop
 * posting the same bodies to the same server in the same run, the limit.
 *
 *   http_bench [MESSAGES] [CONCURRENCY,...] [RUNS]    (20000 1,16,64 3)
 *
 * One process: librdkafka's mock cluster (one broker, 8 partitions; or the
 * real cluster in KRETRY_BENCH_BOOTSTRAP, where the topics are created with
 * unique names and deleted at the end), a
 * small HTTP/1.1 keep-alive server on loopback that answers 204 at once
 * (a thread per connection), the kretry side (an adapter whose handler is
 * the --http handler, handler.thread poll, handler.concurrency C) and the
 * raw side (C requests in flight on one multi handle, easy handles reused).
 * Each side is timed from its first request to its last answer; the ratio
 * is kretry msgs/s over raw msgs/s, median over the runs.
 */
#define _GNU_SOURCE /* memmem() */
#include "http_handler.h"
#include "kretry/kretry.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PARTS 8
#define VALUE 100
#define MAX_RUNS 15

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the server: 204 at once, keep-alive ---- */

static atomic_long served;

/* Read one request (headers, then Content-Length bytes); 0 at EOF. */
static int read_request(int fd, char *buf, size_t size, size_t *have) {
        for (;;) {
                char *end = memmem(buf, *have, "\r\n\r\n", 4);
                if (end) {
                        size_t hlen = (size_t)(end - buf) + 4;
                        long clen   = 0;
                        /* Line by line, as a real server parses: a header
                         * costs a look at its name, not a libc call at each
                         * of its bytes (which made the server's work grow
                         * with the header bytes: 15,800 instructions of
                         * each kretry request, under callgrind). */
                        for (char *p = buf;
                             (p = memchr(p, '\n', (size_t)(end - p)));)
                                if (!strncasecmp(++p, "content-length:", 15))
                                        clen = strtol(p + 15, NULL, 10);
                        while (*have < hlen + (size_t)clen) {
                                ssize_t n = read(fd, buf + *have, size - *have);
                                if (n <= 0)
                                        return 0;
                                *have += (size_t)n;
                        }
                        memmove(buf, buf + hlen + clen,
                                *have - hlen - (size_t)clen);
                        *have -= hlen + (size_t)clen;
                        return 1;
                }
                ssize_t n = read(fd, buf + *have, size - *have);
                if (n <= 0)
                        return 0;
                *have += (size_t)n;
        }
}

static void *conn_main(void *arg) {
        static const char resp[] = "HTTP/1.1 204 No Content\r\n\r\n";
        int fd                   = (int)(intptr_t)arg;
        char *buf                = malloc(65536);
        size_t have              = 0;
        while (buf && read_request(fd, buf, 65536, &have)) {
                atomic_fetch_add(&served, 1);
                if (write(fd, resp, sizeof(resp) - 1) < 0)
                        break;
        }
        free(buf);
        close(fd);
        return NULL;
}

static void *accept_main(void *arg) {
        int lfd = (int)(intptr_t)arg;
        for (;;) {
                int fd = accept(lfd, NULL, NULL);
                if (fd < 0)
                        continue;
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                pthread_t t;
                if (!pthread_create(&t, NULL, conn_main, (void *)(intptr_t)fd))
                        pthread_detach(t);
                else
                        close(fd);
        }
        return NULL;
}

static int server_start(void) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        socklen_t len        = sizeof(a);
        int lfd              = socket(AF_INET, SOCK_STREAM, 0);
        a.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
        pthread_t t;
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) ||
            listen(lfd, 256) || getsockname(lfd, (struct sockaddr *)&a, &len) ||
            pthread_create(&t, NULL, accept_main, (void *)(intptr_t)lfd))
                return -1;
        pthread_detach(t);
        return ntohs(a.sin_port);
}

/* ---- the input ---- */

static char bootstrap[256];
static char (*values)[VALUE];
/* The source and its chain: "hb" on the mock, unique on a real cluster. */
static char src[64];
static char chain[3][80];
static rd_kafka_t *producer;

/* A real cluster: the chain's topics through the admin API, a tier or DLQ
 * taking 128 KiB more than its source (what `kretry topology apply` gives
 * them); or (@p del) their deletion. */
static int real_topics(rd_kafka_t *rk, int del) {
        char err[256];
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_NewTopic_t *nt[3];
        rd_kafka_DeleteTopic_t *dt[3];
        for (int i = 0; i < 3; i++) {
                if (del) {
                        dt[i] = rd_kafka_DeleteTopic_new(chain[i]);
                        continue;
                }
                nt[i] = rd_kafka_NewTopic_new(chain[i], PARTS, -1, err,
                                              sizeof(err));
                rd_kafka_NewTopic_set_config(nt[i], "max.message.bytes",
                                             i ? "1179660" : "1048588");
        }
        if (del)
                rd_kafka_DeleteTopics(rk, dt, 3, NULL, q);
        else
                rd_kafka_CreateTopics(rk, nt, 3, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        int rc               = ev && !rd_kafka_event_error(ev) ? 0 : -1;
        if (ev)
                rd_kafka_event_destroy(ev);
        if (del)
                rd_kafka_DeleteTopic_destroy_array(dt, 3);
        else
                rd_kafka_NewTopic_destroy_array(nt, 3);
        rd_kafka_queue_destroy(q);
        /* Listed by the broker before the adapter's startup check asks. */
        for (int tries = 0; !rc && !del && tries < 100; tries++) {
                const struct rd_kafka_metadata *md = NULL;
                int found                          = 0;
                if (!rd_kafka_metadata(rk, 1, NULL, &md, 5000)) {
                        for (int i = 0; i < md->topic_cnt; i++)
                                for (int j = 0; j < 3; j++)
                                        found += !strcmp(md->topics[i].topic,
                                                         chain[j]) &&
                                                 md->topics[i].partition_cnt ==
                                                         PARTS;
                        rd_kafka_metadata_destroy(md);
                }
                if (found == 3)
                        break;
                struct timespec ts = {0, 100 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        return rc;
}

static int produce(long n) {
        char err[512];
        const char *real   = getenv("KRETRY_BENCH_BOOTSTRAP");
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        if (real && *real) {
                snprintf(bootstrap, sizeof(bootstrap), "%s", real);
                snprintf(src, sizeof(src), "hb-%d", (int)getpid());
                rd_kafka_conf_set(c, "bootstrap.servers", real, err,
                                  sizeof(err));
        } else {
                snprintf(src, sizeof(src), "hb");
                rd_kafka_conf_set(c, "test.mock.num.brokers", "1", err,
                                  sizeof(err));
        }
        snprintf(chain[0], sizeof(chain[0]), "%s", src);
        snprintf(chain[1], sizeof(chain[1]), "%s.retry.1", src);
        snprintf(chain[2], sizeof(chain[2]), "%s.dlq", src);
        rd_kafka_conf_set(c, "linger.ms", "5", err, sizeof(err));
        rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
        if (!p)
                return -1;
        producer                    = p;
        rd_kafka_mock_cluster_t *mc = rd_kafka_handle_mock_cluster(p);
        if (mc) {
                snprintf(bootstrap, sizeof(bootstrap), "%s",
                         rd_kafka_mock_cluster_bootstraps(mc));
                for (int i = 0; i < 3; i++)
                        rd_kafka_mock_topic_create(mc, chain[i], PARTS, 1);
        } else if (real_topics(p, 0)) {
                fprintf(stderr, "http_bench: cannot create %s\n", src);
                return -1;
        }
        values = calloc((size_t)n, VALUE);
        for (long i = 0; i < n; i++) {
                char key[16];
                snprintf(key, sizeof(key), "key-%05ld", i % 10000);
                snprintf(values[i], VALUE, "%015ld", i);
                memset(values[i] + 15, 'v', VALUE - 15);
                while (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(src),
                                         RD_KAFKA_V_KEY(key, strlen(key)),
                                         RD_KAFKA_V_VALUE(values[i], VALUE),
                                         RD_KAFKA_V_END) ==
                       RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        rd_kafka_poll(p, 10);
        }
        rd_kafka_flush(p, 30000);
        /* The producer keeps the mock cluster alive: never destroyed. */
        return 0;
}

/* ---- the kretry side ---- */

typedef struct {
        kretry_http_t *http;
        long want, ok;
        double first;
} side_t;

static kretry_action_t handle(kretry_msg_t *msg, void *opaque) {
        side_t *s = opaque;
        if (s->first == 0)
                s->first = now_s();
        return kretry_http_handle(s->http, msg);
}

static void on_route(const char *topic,
                     int32_t partition,
                     int64_t offset,
                     kretry_route_t route,
                     int tier,
                     const char *error_class,
                     int attempt,
                     void *opaque) {
        side_t *s = opaque;
        (void)topic, (void)partition, (void)offset, (void)tier;
        (void)error_class, (void)attempt;
        if (route == KRETRY_ROUTE_OK)
                s->ok++;
}

static double kretry_side(const char *url, long n, int conc, int run) {
        char err[512], group[64], cs[16];
        side_t s = {.want = n};
        kretry_http_opts_t o;
        kretry_http_opts_init(&o);
        o.url         = url;
        o.concurrency = conc;
        if (!(s.http = kretry_http_new(&o, err, sizeof(err))))
                return -1;
        snprintf(group, sizeof(group), "hb-k-%d-%d-%d", (int)getpid(), conc,
                 run);
        /* As kretry run --http sets it: conc requests open, as many more
         * built and waiting. */
        snprintf(cs, sizeof(cs), "%d", kretry_http_held_max(conc));
        const char *const props[][2] = {
                {"bootstrap.servers", bootstrap},
                {"group.id", group},
                {"source.topic", src},
                {"retry.tiers", "1s"},
                {"handler.concurrency", cs},
                {"handler.thread", "poll"},
                {"socket.nagle.disable", "true"},
                {"consumer.fetch.wait.max.ms", "10"},
                {"consumer.queued.min.messages", "1000000"}};
        kretry_conf_t *conf = kretry_conf_new();
        for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
                if (kretry_conf_set(conf, props[i][0], props[i][1], err,
                                    sizeof(err))) {
                        fprintf(stderr, "%s: %s\n", props[i][0], err);
                        return -1;
                }
        kretry_conf_set_handler(conf, handle, &s);
        kretry_conf_set_route_cb(conf, on_route);
        kretry_adapter_t *a = kretry_adapter_new(conf, err, sizeof(err));
        if (!a) {
                fprintf(stderr, "adapter: %s\n", err);
                return -1;
        }
        double deadline = now_s() + 120;
        while (s.ok < n && now_s() < deadline)
                kretry_adapter_poll(a, 100);
        double rate = s.ok == n ? (double)n / (now_s() - s.first) : -1;
        kretry_adapter_close(a);
        kretry_http_destroy(s.http);
        kretry_adapter_destroy(a);
        return rate;
}

/* ---- the raw side ---- */

static double raw_side(const char *url, long n, int conc) {
        CURLM *m                = curl_multi_init();
        CURL **e                = calloc((size_t)conc, sizeof(*e));
        struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
        hdrs                    = curl_slist_append(hdrs,
                                                    "Content-Type: application/octet-stream");
        /* KRETRY_BENCH_RAW_HEADERS=contract: the raw requests carry the
         * metadata headers kretry sends too (fixed values of the same
         * sizes), so that the ratio shows kretry's machinery alone, not
         * the cost of the header contract on both ends. */
        const char *hs = getenv("KRETRY_BENCH_RAW_HEADERS");
        static const char *const contract[] = {
                "ce-specversion: 1.0",
                "ce-id: 0f8fad5b-d9cb-469f-a165-70867728950e",
                "ce-source: bench-src",
                "ce-type: kretry.message",
                "ce-time: 2026-12-02T02:30:00.000Z",
                "ce-subject: 3/12345",
                "Kretry-Attempt: 1",
                "Kretry-Topic: bench-src",
                "Kretry-Partition: 3",
                "Kretry-Offset: 12345",
                "Kretry-Key: key-1234",
                NULL};
        for (int i = 0; hs && !strcmp(hs, "contract") && contract[i]; i++)
                hdrs = curl_slist_append(hdrs, contract[i]);
        long next = 0, done = 0;
        int running;
        double t0 = now_s();
        for (int i = 0; i < conc && next < n; i++, next++) {
                e[i] = curl_easy_init();
                curl_easy_setopt(e[i], CURLOPT_URL, url);
                curl_easy_setopt(e[i], CURLOPT_HTTPHEADER, hdrs);
                curl_easy_setopt(e[i], CURLOPT_TCP_NODELAY, 1L);
                curl_easy_setopt(e[i], CURLOPT_POSTFIELDSIZE, (long)VALUE);
                curl_easy_setopt(e[i], CURLOPT_POSTFIELDS, values[next]);
                curl_multi_add_handle(m, e[i]);
        }
        while (done < n) {
                CURLMsg *msg;
                int left;
                curl_multi_perform(m, &running);
                while ((msg = curl_multi_info_read(m, &left))) {
                        CURL *h = msg->easy_handle;
                        done++;
                        curl_multi_remove_handle(m, h);
                        if (next < n) {
                                curl_easy_setopt(h, CURLOPT_POSTFIELDS,
                                                 values[next++]);
                                curl_multi_add_handle(m, h);
                        }
                }
                if (done < n)
                        curl_multi_poll(m, NULL, 0, 100, NULL);
        }
        double rate = (double)n / (now_s() - t0);
        for (int i = 0; i < conc; i++)
                if (e[i])
                        curl_easy_cleanup(e[i]);
        curl_slist_free_all(hdrs);
        free(e);
        curl_multi_cleanup(m);
        return rate;
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        long n           = argc > 1 ? atol(argv[1]) : 20000;
        const char *list = argc > 2 ? argv[2] : "1,16,64";
        int runs         = argc > 3 ? atoi(argv[3]) : 3;
        char url[64];
        if (n <= 0 || runs < 1 || runs > MAX_RUNS) {
                fprintf(stderr, "usage: http_bench [MESSAGES] "
                                "[CONCURRENCY,...] [RUNS 1..15]\n");
                return 64;
        }
        int port = server_start();
        if (port < 0 || produce(n)) {
                fprintf(stderr, "http_bench: cannot start\n");
                return 1;
        }
        curl_global_init(CURL_GLOBAL_DEFAULT);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/events", port);
        printf("%ld messages of %d bytes, 204 at once, median of %d runs\n", n,
               VALUE, runs);
        printf("%6s %14s %14s %7s\n", "conc", "kretry msg/s", "raw msg/s",
               "ratio");
        for (const char *p = list; *p;) {
                int conc = atoi(p);
                double k[MAX_RUNS], r[MAX_RUNS], q[MAX_RUNS];
                for (int i = 0; i < runs; i++) {
                        k[i] = kretry_side(url, n, conc, i);
                        r[i] = raw_side(url, n, conc);
                        q[i] = k[i] / r[i];
                }
                qsort(k, (size_t)runs, sizeof(double), cmp);
                qsort(r, (size_t)runs, sizeof(double), cmp);
                qsort(q, (size_t)runs, sizeof(double), cmp);
                printf("%6d %14.0f %14.0f %7.2f\n", conc, k[runs / 2],
                       r[runs / 2], q[runs / 2]);
                fflush(stdout);
                p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p);
        }
        if (!rd_kafka_handle_mock_cluster(producer))
                real_topics(producer, 1);
        return 0;
}
