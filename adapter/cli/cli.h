/*
 * The kretry command-line tool: one function per sub-command, each owning
 * its own option parsing and --help. Exit codes: 0 success, 1 failure the
 * command reports (e.g. an invalid topology), 2 an alert (stats --check),
 * 64 usage error (EX_USAGE).
 */
#ifndef KRETRY_CLI_H
#define KRETRY_CLI_H

#include "cli_util.h" /* KRETRY_EX_USAGE */

int cmd_dev_broker(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_topology(int argc, char **argv);
int cmd_dlq(int argc, char **argv);
/* kretry dlq export (cmd_dlq_export.c): argv[0] is "export". */
int cmd_dlq_export(int argc, char **argv);
int cmd_stats(int argc, char **argv);

#endif
