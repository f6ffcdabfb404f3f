/*
 * The supporting processes of a run: the mock broker and the input
 * producer (all at once, or paced at a steady rate for the delay scenario).
 */
#include "bench.h"

#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double bench_mono(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double bench_loadavg(void) {
        double l = -1;
        FILE *f  = fopen("/proc/loadavg", "r");
        if (f) {
                if (fscanf(f, "%lf", &l) != 1)
                        l = -1;
                fclose(f);
        }
        return l;
}

/* The process's CPU clock: every thread's time, to the nanosecond. */
double bench_cpu(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;
        while (len > 0) {
                ssize_t w = write(fd, p, len);
                if (w <= 0)
                        return -1;
                p += w;
                len -= (size_t)w;
        }
        return 0;
}

int bench_kretry_extra_props(kretry_conf_t *conf, char *err, size_t err_size) {
        const char *env = getenv("KRETRY_BENCH_KRETRY_PROPS");
        char buf[1024], *save = NULL;
        if (!env)
                return 0;
        snprintf(buf, sizeof(buf), "%s", env);
        for (char *kv = strtok_r(buf, ",", &save); kv;
             kv       = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(kv, '=');
                if (!eq) {
                        snprintf(err, err_size, "%s: expected name=value", kv);
                        return -1;
                }
                *eq = '\0';
                if (kretry_conf_set(conf, kv, eq + 1, err, err_size))
                        return -1;
        }
        return 0;
}

#define MAX_TOPICS 7

static const char *const *job_topics(const bench_job_t *job, int *cnt) {
        static const char *t[MAX_TOPICS];
        t[0] = job->source;
        t[1] = job->tier;
        t[2] = job->dlq;
        t[3] = job->copy;
        *cnt = 4;
        if (job->kind == BENCH_TIER_MEM) {
                t[3] = job->empty_source;
                t[4] = job->empty_tier;
                t[5] = job->empty_dlq;
                *cnt = 6;
        }
        if (job->txn_ms > 0) { /* the at-least-once side's own */
                t[(*cnt)++] = job->plain_tier;
                t[(*cnt)++] = job->plain_dlq;
        }
        if (job->kind == BENCH_ORDERED_VERSIONED) {
                t[(*cnt)++] = job->plain_tier;
                t[(*cnt)++] = job->plain_dlq;
                t[(*cnt)++] = job->versions;
        }
        return t;
}

int bench_broker(const bench_job_t *job, int out_fd, int ctl_fd) {
        char errstr[256], line[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set(conf, "log_level", "0", NULL, 0);
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "bench broker: %s\n", errstr);
                return 1;
        }
        rd_kafka_mock_cluster_t *mock = rd_kafka_mock_cluster_new(rk, 1);
        if (!mock) {
                fprintf(stderr, "bench broker: mock cluster failed\n");
                rd_kafka_destroy(rk);
                return 1;
        }
        int cnt;
        const char *const *topics = job_topics(job, &cnt);
        for (int i = 0; i < cnt; i++)
                if (rd_kafka_mock_topic_create(mock, topics[i], job->partitions,
                                               1)) {
                        fprintf(stderr, "bench broker: topic %s\n", topics[i]);
                        return 1;
                }
        memset(line, 0, sizeof(line));
        snprintf(line, sizeof(line), "%s",
                 rd_kafka_mock_cluster_bootstraps(mock));
        if (bench_write_all(out_fd, line, sizeof(line)))
                return 1;
        /* Serve until the orchestrator closes its end. */
        char c;
        while (read(ctl_fd, &c, 1) > 0)
                ;
        rd_kafka_mock_cluster_destroy(mock);
        rd_kafka_destroy(rk);
        return 0;
}

static rd_kafka_conf_t *client_conf(const bench_job_t *job) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set(conf, "bootstrap.servers", job->bootstrap, NULL, 0);
        rd_kafka_conf_set(conf, "socket.nagle.disable", "true", NULL, 0);
        rd_kafka_conf_set(conf, "log_level", "4", NULL, 0);
        return conf;
}

/* Partitions of @p topics (@p partitions each) that do not answer
 * ListOffsets yet, or -1 when the request as a whole failed. */
static long topics_unready(rd_kafka_t *rk,
                           const char *const *topics,
                           int cnt,
                           int partitions) {
        rd_kafka_topic_partition_list_t *l =
                rd_kafka_topic_partition_list_new(cnt * partitions);
        for (int i = 0; i < cnt; i++)
                for (int p = 0; p < partitions; p++)
                        rd_kafka_topic_partition_list_add(l, topics[i], p)
                                ->offset = RD_KAFKA_OFFSET_SPEC_LATEST;
        rd_kafka_AdminOptions_t *opt =
                rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTOFFSETS);
        rd_kafka_AdminOptions_set_request_timeout(opt, 10000, NULL, 0);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_ListOffsets(rk, l, opt, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
        long left            = -1;
        if (ev && !rd_kafka_event_error(ev)) {
                size_t n;
                const rd_kafka_ListOffsetsResultInfo_t **ri =
                        rd_kafka_ListOffsets_result_infos(
                                rd_kafka_event_ListOffsets_result(ev), &n);
                left = (long)cnt * partitions - (long)n;
                for (size_t i = 0; i < n; i++)
                        left += rd_kafka_ListOffsetsResultInfo_topic_partition(
                                        ri[i])
                                        ->err != 0;
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_AdminOptions_destroy(opt);
        rd_kafka_topic_partition_list_destroy(l);
        return left;
}

/* CreateTopics returns once the controller has the topics: their metadata
 * names leaders at once, but each leader takes a write only once it has
 * made the partition's log, and a run at 512 partitions has 2,048 of them
 * (4,096 with the last run's being deleted): on a loaded machine that took
 * longer than the input producer's flush. Wait until every partition of
 * the run's topics answers ListOffsets (a leader with its log), up to
 * @p timeout_s. */
static int topics_wait_ready(rd_kafka_t *rk,
                             const char *const *topics,
                             int cnt,
                             int partitions,
                             int timeout_s) {
        double t0 = bench_mono();
        long left;
        while ((left = topics_unready(rk, topics, cnt, partitions)) != 0) {
                if (bench_mono() - t0 > timeout_s) {
                        fprintf(stderr,
                                "bench: after %d s, %ld partitions of "
                                "the run's topics (-1: the request) still "
                                "answer no ListOffsets\n",
                                timeout_s, left);
                        return -1;
                }
                struct timespec ts = {0, 200 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        if (getenv("KRETRY_BENCH_DEBUG") || bench_mono() - t0 > 5)
                fprintf(stderr,
                        "bench: the run's %d topics of %d partitions took "
                        "requests %.1f s after they were created\n",
                        cnt, partitions, bench_mono() - t0);
        return 0;
}

int bench_create_real_topics(const bench_job_t *job) {
        char errstr[256];
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, client_conf(job),
                                      errstr, sizeof(errstr));
        if (!rk)
                return -1;
        int cnt, rc = 0;
        const char *const *topics = job_topics(job, &cnt);
        rd_kafka_NewTopic_t *nt[MAX_TOPICS];
        for (int i = 0; i < cnt; i++) {
                nt[i] = rd_kafka_NewTopic_new(topics[i], job->partitions, -1,
                                              errstr, sizeof(errstr));
                /* The adapter refuses a changelog that is not compacted,
                 * and warns about a tier or DLQ that does not take the
                 * source's largest message plus kretry's headers (Kafka's
                 * default limit, plus the 128 KiB that `kretry topology
                 * apply` adds). */
                size_t len = strlen(topics[i]);
                int copies = strstr(topics[i], ".retry.") ||
                             (len > 4 && !strcmp(topics[i] + len - 4, ".dlq"));
                if (topics[i] == job->versions)
                        rd_kafka_NewTopic_set_config(nt[i], "cleanup.policy",
                                                     "compact");
                else
                        rd_kafka_NewTopic_set_config(nt[i], "max.message.bytes",
                                                     copies ? "1179660"
                                                            : "1048588");
        }
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, nt, (size_t)cnt, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
        if (!ev)
                fprintf(stderr, "bench: CreateTopics: no answer in 60 s\n");
        const rd_kafka_CreateTopics_result_t *res =
                ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
        size_t n = 0;
        const rd_kafka_topic_result_t **tr =
                res ? rd_kafka_CreateTopics_result_topics(res, &n) : NULL;
        if (n != (size_t)cnt)
                rc = -1;
        for (size_t i = 0; i < n; i++)
                if (rd_kafka_topic_result_error(tr[i]) &&
                    rd_kafka_topic_result_error(tr[i]) !=
                            RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                        fprintf(stderr, "bench: create %s: %s\n",
                                rd_kafka_topic_result_name(tr[i]),
                                rd_kafka_topic_result_error_string(tr[i]));
                        rc = -1;
                }
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_NewTopic_destroy_array(nt, (size_t)cnt);
        rd_kafka_queue_destroy(q);
        if (!rc)
                rc = topics_wait_ready(rk, topics, cnt, job->partitions, 300);
        rd_kafka_destroy(rk);
        return rc;
}

void bench_delete_real_topics(const bench_job_t *job) {
        char errstr[256];
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, client_conf(job),
                                      errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "bench: topics left: %s\n", errstr);
                return;
        }
        int cnt;
        const char *const *topics = job_topics(job, &cnt);
        rd_kafka_DeleteTopic_t *dt[MAX_TOPICS];
        for (int i = 0; i < cnt; i++)
                dt[i] = rd_kafka_DeleteTopic_new(topics[i]);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteTopics(rk, dt, (size_t)cnt, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        if (!ev || rd_kafka_event_error(ev))
                fprintf(stderr, "bench: DeleteTopics: %s\n",
                        ev ? rd_kafka_event_error_string(ev) : "no answer");
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_DeleteTopic_destroy_array(dt, (size_t)cnt);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
}

static void
produce_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)opaque;
        long *failed = rd_kafka_opaque(rk);
        if (m->err)
                (*failed)++;
}

/* Message @p i: key "key-<i mod keys>" (5 digits at least), a value of
 * @p vlen bytes (starting with i, 15 digits), two headers; with @p version
 * a third, "version": the message's rank among its key's (1, 2, ...). */
static rd_kafka_resp_err_t produce_one(rd_kafka_t *rk,
                                       const char *topic,
                                       long i,
                                       long keys,
                                       int version,
                                       size_t vlen) {
        char key[32], value[BENCH_VALUE_MAX], seq[24], trace[17], ver[24];
        int kl = snprintf(key, sizeof(key), "key-%05ld", i % keys);
        memset(value, 'v', vlen);
        snprintf(seq, sizeof(seq), "%015ld", i);
        memcpy(value, seq, 15);
        value[15] = '-';
        snprintf(trace, sizeof(trace), "%016lx",
                 (unsigned long)i * 2654435761u);
        rd_kafka_headers_t *h = rd_kafka_headers_new(3);
        rd_kafka_header_add(h, "trace-id", -1, trace, 16);
        rd_kafka_header_add(h, "content-type", -1, "application/octet-stream",
                            -1);
        if (version) {
                snprintf(ver, sizeof(ver), "%ld", i / keys + 1);
                rd_kafka_header_add(h, "version", -1, ver, -1);
        }
        for (;;) {
                rd_kafka_resp_err_t err = rd_kafka_producev(
                        rk, RD_KAFKA_V_TOPIC(topic),
                        RD_KAFKA_V_KEY(key, (size_t)kl),
                        RD_KAFKA_V_VALUE(value, vlen),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                        if (err)
                                rd_kafka_headers_destroy(h);
                        return err;
                }
                rd_kafka_poll(rk, 10); /* wait for deliveries to make room */
        }
}

/* Paced: every 10 ms tick, the arrivals due by then. */
static int produce_paced(rd_kafka_t *rk, const bench_job_t *job, size_t vlen) {
        struct timespec t0, tick;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tick      = t0;
        long sent = 0;
        while (sent < job->n) {
                tick.tv_nsec += 10 * 1000 * 1000;
                if (tick.tv_nsec >= 1000000000) {
                        tick.tv_nsec -= 1000000000;
                        tick.tv_sec++;
                }
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL);
                double el = (double)(tick.tv_sec - t0.tv_sec) +
                            (double)(tick.tv_nsec - t0.tv_nsec) / 1e9;
                long due = (long)(el * job->rate);
                for (; sent < due && sent < job->n; sent++)
                        if (produce_one(rk, job->source, sent, job->keys, 0,
                                        vlen))
                                return -1;
                rd_kafka_poll(rk, 0);
        }
        return 0;
}

/* The test cluster keeps at most 5 MiB a partition and silently drops the
 * oldest data past it: an input that does not fit would leave both sides
 * waiting for messages that are gone, until their timeout. 1 (and why on
 * stderr) when a partition of the input no longer starts at offset 0. */
static int input_dropped(rd_kafka_t *rk, const bench_job_t *job) {
        for (int p = 0; p < job->partitions; p++) {
                int64_t lo = 0, hi = 0;
                if (rd_kafka_query_watermark_offsets(rk, job->source, p, &lo,
                                                     &hi, 10000) ||
                    lo <= 0)
                        continue;
                fprintf(stderr,
                        "bench producer: %s [%d] starts at offset %lld of "
                        "%lld: the test cluster keeps at most 5 MiB a "
                        "partition and dropped the oldest of the input; run "
                        "with fewer --messages\n",
                        job->source, p, (long long)lo, (long long)hi);
                return 1;
        }
        return 0;
}

int bench_produce(const bench_job_t *job) {
        char errstr[256];
        long failed = 0;
        if (job->real && bench_create_real_topics(job))
                return 1;
        rd_kafka_conf_t *conf = client_conf(job);
        rd_kafka_conf_set(conf, "queue.buffering.max.messages", "1000000", NULL,
                          0);
        rd_kafka_conf_set_dr_msg_cb(conf, produce_dr);
        rd_kafka_conf_set_opaque(conf, &failed);
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "bench producer: %s\n", errstr);
                return 1;
        }
        int rc      = 0;
        int version = job->kind == BENCH_ORDERED_VERSIONED;
        double t0   = bench_mono();
        size_t vlen =
                job->value_bytes >= 16 && job->value_bytes <= BENCH_VALUE_MAX
                        ? (size_t)job->value_bytes
                        : BENCH_VALUE_SIZE;
        if (job->rate > 0)
                rc = produce_paced(rk, job, vlen);
        else
                for (long i = 0; i < job->n && !rc; i++)
                        rc = produce_one(rk, job->source, i, job->keys, version,
                                         vlen)
                                     ? -1
                                     : 0;
        if (rd_kafka_flush(rk, 60000) || failed)
                rc = -1;
        if (!rc && !job->real && job->rate <= 0 && input_dropped(rk, job))
                rc = 1;
        if (getenv("KRETRY_BENCH_DEBUG"))
                fprintf(stderr, "  [producer] %ld in %.3f s\n", job->n,
                        bench_mono() - t0);
        if (rc < 0)
                fprintf(stderr, "bench producer: %ld deliveries failed\n",
                        failed);
        rd_kafka_destroy(rk);
        return rc ? 1 : 0;
}
