# kretry dlq inspect/replay: the plain-data parts as unit suites, the
# commands on the mock cluster.
kretry_add_suite(test_dlq_filter LABELS unit)
kretry_add_suite(test_ratelimit LABELS unit)
kretry_add_suite(test_replay_headers LABELS unit)
kretry_add_suite(it_dlq TIMEOUT 240 LABELS "integration;secure")
target_link_libraries(it_dlq PRIVATE PkgConfig::JANSSON)
add_dependencies(it_dlq kretry_cli)
# The DLQ end to end: the engine dead-letters, the commands read and replay.
kretry_add_suite(it_dlq_e2e TIMEOUT 240 LABELS "integration;secure" SOURCES it_harness.c)
target_link_libraries(it_dlq_e2e PRIVATE PkgConfig::JANSSON PkgConfig::AVRO)
add_dependencies(it_dlq_e2e kretry_cli)
# The DLQ's failures grouped: plain data, then 100,000 dead letters on the
# mock cluster within 2 s.
kretry_add_suite(it_dlq_groups TIMEOUT 180 LABELS integration)
target_link_libraries(it_dlq_groups PRIVATE PkgConfig::JANSSON)
