kretry_add_suite(it_core TIMEOUT 240 LABELS integration SOURCES it_harness.c)
kretry_add_suite(it_faults TIMEOUT 240 LABELS integration SOURCES it_harness.c)
