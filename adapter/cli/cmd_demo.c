/*
 * kretry demo: the whole story on an embedded cluster (librdkafka's mock
 * cluster, in-process), no setup. An "orders" topic gets good orders,
 * orders that fail transiently a few times, poison orders and orders whose
 * dependency stays down; the adapter handles them and the demo prints what
 * moved where, then a table of the counters.
 */
#include "cli.h"
#include "codec.h"
#include "kretry/kretry.h"

#include <getopt.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "kretry demo"
#define DEMO_PARTITIONS 3

typedef struct {
        int64_t t0;
        int quiet;
        int total, finished; /* messages, and those that reached an end */
} demo_t;

static kretry_adapter_t *volatile demo_adapter;

static void on_signal(int sig) {
        (void)sig;
        kretry_adapter_stop(demo_adapter);
}

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#ifdef __GNUC__
__attribute__((format(printf, 2, 3)))
#endif
static void
say(const demo_t *d, const char *fmt, ...) {
        if (d->quiet)
                return;
        va_list ap;
        printf("%6.2fs  ", (double)(now_ms() - d->t0) / 1000.0);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
}

static const char *field_str(const avro_value_t *rec, const char *name) {
        avro_value_t f, branch;
        const char *str = NULL;
        size_t size;
        if (avro_value_get_by_name(rec, name, &f, NULL))
                return "";
        if (avro_value_get_type(&f) == AVRO_UNION &&
            avro_value_get_current_branch(&f, &branch) == 0)
                f = branch;
        if (avro_value_get_type(&f) != AVRO_STRING ||
            avro_value_get_string(&f, &str, &size))
                return "";
        return str;
}

/* The story each order plays: its Avro record's note says what it is. */
static kretry_action_t demo_handler(kretry_msg_t *msg, void *opaque) {
        demo_t *d               = opaque;
        const avro_value_t *rec = kretry_msg_value_avro(msg);
        if (!rec)
                return KRETRY_FAIL; /* cannot happen: undecodable values
                                       never reach the handler */
        const char *order    = field_str(rec, "order_id");
        const char *customer = field_str(rec, "customer");
        const char *kind     = field_str(rec, "note");
        int attempt          = kretry_msg_attempt(msg);
        const char *from     = kretry_msg_topic(msg);
        if (!strncmp(kind, "flaky", 5)) {
                int fails = atoi(kind + 5);
                if (attempt <= fails) {
                        say(d,
                            "%-9s attempt %d from %-16s RETRY  payment "
                            "service answered 503",
                            order, attempt, from);
                        kretry_msg_set_error(msg, "HTTP_503",
                                             "payment service unavailable");
                        return KRETRY_RETRY;
                }
        } else if (!strcmp(kind, "invalid")) {
                say(d, "%-9s attempt %d from %-16s FAIL   amount is negative",
                    order, attempt, from);
                kretry_msg_set_error(msg, "VALIDATION", "amount is negative");
                return KRETRY_FAIL;
        } else if (!strcmp(kind, "down")) {
                say(d,
                    "%-9s attempt %d from %-16s RETRY  inventory service "
                    "timed out",
                    order, attempt, from);
                kretry_msg_set_error(msg, "TIMEOUT",
                                     "inventory service timed out");
                return KRETRY_RETRY;
        }
        say(d, "%-9s attempt %d from %-16s OK     %s", order, attempt, from,
            customer);
        return KRETRY_OK;
}

static void demo_route(const char *topic,
                       int32_t partition,
                       int64_t offset,
                       kretry_route_t route,
                       int tier,
                       const char *cls,
                       int attempt,
                       void *opaque) {
        demo_t *d = opaque;
        (void)attempt;
        if (route == KRETRY_ROUTE_OK || route == KRETRY_ROUTE_DLQ ||
            route == KRETRY_ROUTE_INVALID || route == KRETRY_ROUTE_STALE)
                d->finished++;
        if (route == KRETRY_ROUTE_PARKED)
                say(d,
                    "          %s[%d]@%lld  -> parked in orders.retry.%d "
                    "behind an earlier order of the same customer "
                    "(ordering: key)",
                    topic, (int)partition, (long long)offset, tier);
        else if (route == KRETRY_ROUTE_RETRY)
                say(d,
                    "          %s[%d]@%lld  -> orders.retry.%d (waits "
                    "there, partition not blocked)",
                    topic, (int)partition, (long long)offset, tier);
        else if (route != KRETRY_ROUTE_OK && cls && !strcmp(cls, "schema"))
                say(d,
                    "          %s[%d]@%lld  -> orders.dlq (schema: the "
                    "value is not an Avro Order; the handler never saw "
                    "it)",
                    topic, (int)partition, (long long)offset);
        else if (route != KRETRY_ROUTE_OK)
                say(d, "          %s[%d]@%lld  -> orders.dlq (%s)", topic,
                    (int)partition, (long long)offset, cls);
}

static void demo_log(kretry_log_level_t level,
                     const char *fac,
                     const char *msg,
                     void *opaque) {
        (void)opaque;
        /* The embedded cluster's connection chatter is not the story. */
        if (level <= KRETRY_LOG_ERR && strncmp(fac, "rdkafka.", 8))
                fprintf(stderr, PROG ": %s: %s\n", fac, msg);
}

/* What each order does; "poison" is a payload that is not an Order. */
static const char *const orders[] = {
        "ok",   "flaky1", "ok",     "poison", "ok",      "flaky2", "ok",
        "down", "ok",     "flaky1", "ok",     "invalid", "ok",     "ok",
};
#define ORDER_CNT ((int)(sizeof(orders) / sizeof(orders[0])))

extern const char kretry_avsc_order[]; /* schemas/examples/order.avsc */

/* Schema id 2 in the Confluent wire format, as orders-avro.yaml maps it. */
#define DEMO_SCHEMA_ID 2

static int
set_field(avro_value_t *rec, const char *name, const char *s, int64_t n) {
        avro_value_t f, b;
        if (avro_value_get_by_name(rec, name, &f, NULL))
                return -1;
        switch (avro_value_get_type(&f)) {
        case AVRO_STRING:
                return avro_value_set_string(&f, s);
        case AVRO_INT64:
                return avro_value_set_long(&f, n);
        case AVRO_ENUM:
                return avro_value_set_enum(&f, (int)n);
        case AVRO_BOOLEAN:
                return avro_value_set_boolean(&f, (int)n);
        case AVRO_UNION: /* note: ["null", "string"] */
                return avro_value_set_branch(&f, s ? 1 : 0, &b) ||
                       (s ? avro_value_set_string(&b, s)
                          : avro_value_set_null(&b));
        default:
                return 0; /* items stays empty */
        }
}

/* The Confluent-framed Avro Order for order @p i into @p buf. */
static int64_t
encode_order(avro_value_iface_t *iface, int i, void *buf, size_t size) {
        avro_value_t rec;
        char id[32], customer[32];
        if (avro_generic_value_new(iface, &rec))
                return -1;
        snprintf(id, sizeof(id), "order-%d", i + 1);
        snprintf(customer, sizeof(customer), "customer-%d", i % 5);
        int bad = set_field(&rec, "order_id", id, 0) ||
                  set_field(&rec, "version", NULL, 1) ||
                  set_field(&rec, "customer", customer, 0) ||
                  set_field(&rec, "amount_cents", NULL, 1000 + 100 * i) ||
                  set_field(&rec, "currency", NULL, 0) ||
                  set_field(&rec, "status", NULL, 0) ||
                  set_field(&rec, "express", NULL, i % 2) ||
                  set_field(&rec, "note", orders[i], 0);
        int64_t n =
                bad ? -1 : kretry_codec_encode(&rec, DEMO_SCHEMA_ID, buf, size);
        avro_value_decref(&rec);
        return n;
}

static int produce_orders(const char *bootstrap) {
        char errstr[256];
        avro_schema_t schema;
        if (avro_schema_from_json_length(kretry_avsc_order,
                                         strlen(kretry_avsc_order), &schema)) {
                fprintf(stderr, PROG ": order schema: %s\n", avro_strerror());
                return -1;
        }
        avro_value_iface_t *iface = avro_generic_class_from_schema(schema);
        rd_kafka_conf_t *conf     = rd_kafka_conf_new();
        rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, NULL, 0);
        rd_kafka_conf_set(conf, "socket.nagle.disable", "true", NULL, 0);
        rd_kafka_conf_set(conf, "log_level", "0", NULL, 0);
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        int rc = -1;
        if (!rk) {
                fprintf(stderr, PROG ": producer: %s\n", errstr);
                goto out;
        }
        for (int i = 0; i < ORDER_CNT; i++) {
                char key[32];
                unsigned char value[512];
                int64_t n;
                snprintf(key, sizeof(key), "customer-%d", i % 5);
                if (!strcmp(orders[i], "poison")) {
                        /* Not an Order: a JSON text where Avro is expected. */
                        n = snprintf((char *)value, sizeof(value),
                                     "{\"order\": %d}", i + 1);
                } else if ((n = encode_order(iface, i, value, sizeof(value))) <
                           0) {
                        fprintf(stderr, PROG ": encoding order %d\n", i + 1);
                        goto out;
                }
                rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("orders"),
                                  RD_KAFKA_V_KEY(key, strlen(key)),
                                  RD_KAFKA_V_VALUE(value, (size_t)n),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_END);
        }
        rc = rd_kafka_flush(rk, 10000) ? -1 : 0;
out:
        if (rk)
                rd_kafka_destroy(rk);
        avro_value_iface_decref(iface);
        avro_schema_decref(schema);
        return rc;
}

/* The codec reads schemas from files: write the compiled-in one out. */
static int schema_file(char *path, size_t size) {
        snprintf(path, size, "/tmp/kretry-demo-order-XXXXXX");
        int fd = mkstemp(path);
        if (fd < 0)
                return -1;
        size_t len = strlen(kretry_avsc_order);
        int rc     = write(fd, kretry_avsc_order, len) == (ssize_t)len ? 0 : -1;
        close(fd);
        return rc;
}

static kretry_conf_t *
demo_conf(const char *bootstrap, const char *schema, demo_t *d) {
        static const char *const kv[][2] = {
                {"source.topic", "orders"},
                {"group.id", "orders-service"},
                {"retry.tiers", "300ms,1s"},
                {"retry.max.attempts", "4"},
                {"retry.jitter", "20%"},
                {"ordering", "key"},
                {"socket.nagle.disable", "true"},
                {"fetch.wait.max.ms", "10"},
                {"session.timeout.ms", "6000"},
                {"linger.ms", "1"},
        };
        char errstr[512];
        kretry_conf_t *conf = kretry_conf_new();
        if (!conf)
                return NULL;
        char ids[128];
        snprintf(ids, sizeof(ids), "%d=%s", DEMO_SCHEMA_ID, schema);
        kretry_conf_set(conf, "bootstrap.servers", bootstrap, NULL, 0);
        kretry_conf_set(conf, "value.format", "avro", NULL, 0);
        kretry_conf_set(conf, "value.schema", schema, NULL, 0);
        kretry_conf_set(conf, "value.wire", "confluent", NULL, 0);
        kretry_conf_set(conf, "value.schema.ids", ids, NULL, 0);
        for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
                if (kretry_conf_set(conf, kv[i][0], kv[i][1], errstr,
                                    sizeof(errstr))) {
                        fprintf(stderr, PROG ": %s\n", errstr);
                        kretry_conf_destroy(conf);
                        return NULL;
                }
        kretry_conf_set_handler(conf, demo_handler, d);
        kretry_conf_set_route_cb(conf, demo_route);
        kretry_conf_set_log_cb(conf, demo_log, NULL);
        return conf;
}

static void print_table(kretry_adapter_t *a) {
        printf("\n%-28s %6s\n", "outcome", "count");
        printf("%-28s %6lld\n", "consumed (source + tiers)",
               (long long)kretry_adapter_counter(a, KRETRY_COUNTER_CONSUMED,
                                                 0));
        printf("%-28s %6lld\n", "handled OK",
               (long long)kretry_adapter_counter(a, KRETRY_COUNTER_OK, 0));
        printf("%-28s %6lld\n", "parked behind their key",
               (long long)kretry_adapter_counter(a, KRETRY_COUNTER_FORWARDED,
                                                 0));
        for (int t = 1; t <= 2; t++) {
                char label[64];
                snprintf(label, sizeof(label), "retried to orders.retry.%d", t);
                printf("%-28s %6lld\n", label,
                       (long long)kretry_adapter_counter(
                               a, KRETRY_COUNTER_RETRIED, t));
        }
        static const struct {
                const char *label;
                kretry_counter_t c;
        } dlq[] = {{"dead-lettered: permanent", KRETRY_COUNTER_DLQ_PERMANENT},
                   {"dead-lettered: exhausted", KRETRY_COUNTER_DLQ_EXHAUSTED},
                   {"dead-lettered: expired", KRETRY_COUNTER_DLQ_EXPIRED},
                   {"dead-lettered: schema", KRETRY_COUNTER_DLQ_SCHEMA}};
        for (size_t i = 0; i < sizeof(dlq) / sizeof(dlq[0]); i++)
                printf("%-28s %6lld\n", dlq[i].label,
                       (long long)kretry_adapter_counter(a, dlq[i].c, 0));
}

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry demo [--quiet]\n\n"
                "Start an embedded Kafka cluster (librdkafka's mock cluster, "
                "in-process), produce\n%d Avro orders "
                "(schemas/examples/order.avsc, Confluent wire format) to\n"
                "\"orders\" — good ones, ones that fail transiently, an "
                "invalid one, one whose\ndependency stays down, and a poison "
                "payload that is not an Order at all — and\nrun kretry on "
                "them with tiers\n"
                "orders.retry.1 (300ms) and orders.retry.2 (1s), at most 4 "
                "attempts, and\norders.dlq, keeping each customer's orders in "
                "order (ordering: key): an\norder waits behind an earlier "
                "one of its customer that is retrying.\nPrints what moved "
                "where as it goes, then the counters.\n\n"
                "  -q, --quiet   print only the final table\n"
                "  -h, --help    show this help\n\n"
                "Exit status: 0 when every order reached an end (OK or the "
                "DLQ), 1 otherwise.\n",
                ORDER_CNT);
}

static int run_demo(demo_t *d, const char *bootstrap) {
        char errstr[512], schema[64];
        if (schema_file(schema, sizeof(schema))) {
                fprintf(stderr, PROG ": cannot write the order schema\n");
                return 1;
        }
        kretry_conf_t *conf = demo_conf(bootstrap, schema, d);
        if (!conf) {
                unlink(schema);
                return 1;
        }
        kretry_adapter_t *a = kretry_adapter_new(conf, errstr, sizeof(errstr));
        if (!a) {
                fprintf(stderr, PROG ": %s\n", errstr);
                kretry_conf_destroy(conf);
                unlink(schema);
                return 1;
        }
        demo_adapter = a;
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        say(d, "kretry joins group orders-service (the embedded cluster "
               "takes ~3 s for a first join)");
        int64_t deadline = now_ms() + 60000;
        while (d->finished < d->total && now_ms() < deadline &&
               kretry_adapter_poll(a, 200) == KRETRY_ERR_OK)
                ;
        kretry_adapter_close(a);
        print_table(a);
        int ok = d->finished >= d->total;
        printf("\n%s: %d of %d orders reached an end (handled OK or in "
               "orders.dlq with their failure context).\n",
               ok ? "done" : "incomplete", d->finished, d->total);
        demo_adapter = NULL;
        kretry_adapter_destroy(a);
        unlink(schema);
        return ok ? 0 : 1;
}

int cmd_demo(int argc, char **argv) {
        static const struct option longopts[] = {
                {"quiet", no_argument, NULL, 'q'},
                {"help", no_argument, NULL, 'h'},
                {NULL, 0, NULL, 0}};
        demo_t d = {.t0 = now_ms(), .total = ORDER_CNT};
        int c;
        opterr = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
                if (c == 'h') {
                        usage(stdout);
                        return 0;
                }
                if (c != 'q') {
                        fprintf(stderr, PROG ": unknown option \"%s\"\n",
                                argv[optind - 1]);
                        usage(stderr);
                        return KRETRY_EX_USAGE;
                }
                d.quiet = 1;
        }
        char errstr[256];
        rd_kafka_conf_t *rconf = rd_kafka_conf_new();
        rd_kafka_conf_set(rconf, "log_level", "0", NULL, 0);
        rd_kafka_t *rk =
                rd_kafka_new(RD_KAFKA_PRODUCER, rconf, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, PROG ": %s\n", errstr);
                return 1;
        }
        rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, 1);
        int rc                      = 1;
        if (!mc) {
                fprintf(stderr,
                        PROG ": could not start the embedded cluster\n");
                goto out;
        }
        const char *topics[] = {"orders", "orders.retry.1", "orders.retry.2",
                                "orders.dlq"};
        for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++)
                rd_kafka_mock_topic_create(mc, topics[i], DEMO_PARTITIONS, 1);
        const char *bootstrap = rd_kafka_mock_cluster_bootstraps(mc);
        say(&d,
            "embedded cluster at %s; topics orders, orders.retry.1 "
            "(300ms), orders.retry.2 (1s), orders.dlq",
            bootstrap);
        if (produce_orders(bootstrap) == 0) {
                say(&d, "produced %d orders", ORDER_CNT);
                rc = run_demo(&d, bootstrap);
        }
        rd_kafka_mock_cluster_destroy(mc);
out:
        rd_kafka_destroy(rk);
        return rc;
}
