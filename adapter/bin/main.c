#include "cli.h"
#include "conf.h" /* kretry_rdkafka_check() */
#include "kretry/kretry.h"
#include "ui.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <string.h>

static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
        const char *summary;
} commands[] = {
        {"demo", cmd_demo,
         "run the whole retry story on an embedded cluster, no setup"},
        {"run", cmd_run, "run the adapter with an external handler command"},
        {"dev-broker", cmd_dev_broker,
         "run librdkafka's mock cluster as a standalone broker"},
        {"topology", cmd_topology,
         "validate, describe, plan and apply a YAML topology"},
        {"dlq", cmd_dlq,
         "inspect a topology's dead-letter topic and replay it"},
        {"stats", cmd_stats,
         "per-topic backlog, oldest age, rates and drain time; --check alerts"},
        {"ui", cmd_ui,
         "the DLQ as a web page: figures, browser, replay, export (HTTP API)"},
};

#define COMMAND_CNT (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out) {
        fprintf(out,
                "usage: kretry <command> [options]\n"
                "       kretry --version | --help\n\n"
                "Retry tiers and dead-letter topics for Kafka consumers.\n\n"
                "commands:\n");
        for (size_t i = 0; i < COMMAND_CNT; i++)
                fprintf(out, "  %-12s %s\n", commands[i].name,
                        commands[i].summary);
        fprintf(out, "\n'kretry <command> --help' describes one command.\n");
}

/* Every command makes librdkafka clients, with an adapter or without
 * (admin, DLQ reader, replay, stats, the mock cluster): the librdkafka
 * loaded is checked once here, before any. */
static int run_command(size_t i, int argc, char **argv) {
        char errstr[512];
        if (kretry_rdkafka_check(errstr, sizeof(errstr))) {
                fprintf(stderr, "kretry: %s\n", errstr);
                return 1;
        }
        return commands[i].fn(argc - 1, argv + 1);
}

int main(int argc, char **argv) {
        if (argc < 2) {
                usage(stderr);
                return KRETRY_EX_USAGE;
        }
        if (!strcmp(argv[1], "--version")) {
                /* The librdkafka actually loaded, which may not be the
                 * one kretry was built against. */
                printf("kretry %s\nlibrdkafka %s\n", kretry_version_str(),
                       rd_kafka_version_str());
                return 0;
        }
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
                usage(stdout);
                return 0;
        }
        for (size_t i = 0; i < COMMAND_CNT; i++)
                if (!strcmp(argv[1], commands[i].name))
                        return run_command(i, argc, argv);
        fprintf(stderr, "kretry: unknown command \"%s\"\n", argv[1]);
        usage(stderr);
        return KRETRY_EX_USAGE;
}
