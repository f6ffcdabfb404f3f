/*
 * kretry dlq replay (lands in the next change).
 */
#include "dlq_cli.h"

int dlq_replay(const dlq_opts_t *o, const dlq_target_t *tg) {
        (void)o, (void)tg;
        fprintf(stderr, "kretry dlq replay: not available in this build\n");
        return 1;
}
