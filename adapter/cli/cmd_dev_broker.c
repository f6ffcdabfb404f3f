/* Placeholder until the command lands; replaced by its implementation. */
#include "cli.h"

#include <stdio.h>

int cmd_dev_broker(int argc, char **argv) {
        (void)argc;
        (void)argv;
        fprintf(stderr, "kretry: this command is not built yet\n");
        return 1;
}
