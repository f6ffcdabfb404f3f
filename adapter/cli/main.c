#include "kretry/kretry.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
        if (argc > 1 && !strcmp(argv[1], "--version")) {
                printf("kretry %s\n", kretry_version_str());
                return 0;
        }
        fprintf(stderr, "usage: kretry --version\n");
        return 64;
}
