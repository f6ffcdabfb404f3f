# Label secure: also run on the secured cluster (scripts/test.sh), kretry
# logged in as the service user with only its ACLs.
kretry_add_suite(it_core TIMEOUT 240 LABELS "integration;secure" SOURCES it_harness.c)
kretry_add_suite(it_faults TIMEOUT 480 LABELS integration SOURCES it_harness.c
                 SEPARATE test_session_timeout_refused)
set_tests_properties(it_faults.test_session_timeout_refused PROPERTIES LABELS real)
add_executable(it_worker it_worker.c)
target_link_libraries(it_worker PRIVATE kretry_static)
# test_kill_key_repeats_as_none: real Kafka only (label real).
kretry_add_suite(it_kill TIMEOUT 480 LABELS "integration;secure" SOURCES kill_harness.c
                 SEPARATE test_kill_key_repeats_as_none)
set_tests_properties(it_kill.test_kill_key_repeats_as_none PROPERTIES LABELS real)
# The routing=transactional kills need a real cluster (the mock's
# transactions write no markers); label real lets the mock pass skip them.
kretry_add_suite(it_kill_txn TIMEOUT 480 LABELS "integration;real"
                 SOURCES kill_harness.c)
foreach(suite it_kill it_kill_txn)
  add_dependencies(${suite} it_worker)
  target_compile_definitions(${suite} PRIVATE IT_WORKER_PATH="$<TARGET_FILE:it_worker>")
endforeach()
kretry_add_suite(it_rebalance TIMEOUT 240 LABELS integration SOURCES it_harness.c)
# test_park_rebuilt_txn: routing=transactional, real Kafka only.
kretry_add_suite(it_ordering TIMEOUT 300 LABELS integration SOURCES it_harness.c
                 SEPARATE test_park_rebuilt_txn)
set_tests_properties(it_ordering.test_park_rebuilt_txn PROPERTIES LABELS real)
kretry_add_suite(it_concurrency TIMEOUT 300 LABELS integration SOURCES it_harness.c)
# test_txn_through_aborts, test_txn_aborts_blind: routing=transactional,
# real Kafka only.
kretry_add_suite(it_async TIMEOUT 300 LABELS integration SOURCES it_harness.c
                 SEPARATE test_txn_through_aborts test_txn_aborts_blind)
set_tests_properties(it_async.test_txn_through_aborts
                     it_async.test_txn_aborts_blind PROPERTIES LABELS real)
kretry_add_suite(it_avro TIMEOUT 240 LABELS integration SOURCES it_harness.c)
kretry_add_suite(it_contract TIMEOUT 240 LABELS integration SOURCES it_harness.c)
target_link_libraries(it_contract PRIVATE PkgConfig::JANSSON)
kretry_add_suite(it_lifecycle TIMEOUT 300 LABELS integration SOURCES it_harness.c
                 SEPARATE test_refused_copy_too_large_real)
set_tests_properties(it_lifecycle.test_refused_copy_too_large_real PROPERTIES LABELS real)
kretry_add_suite(it_chaos TIMEOUT 480 LABELS integration SOURCES it_harness.c)
# test_apply_then_start, test_apply_new_source, test_start_right_after_create and
# test_changelog_not_compacted_refused need a real cluster
# (KRETRY_TEST_BOOTSTRAP); label real keeps them out of the mock pass's list
# of what may skip. test_changelog_policy_unknown needs the mock (a real
# cluster answers DescribeConfigs) and skips on its own on real Kafka.
kretry_add_suite(it_topology_check TIMEOUT 120 LABELS integration SOURCES it_harness.c
                 SEPARATE test_apply_then_start test_apply_new_source
                          test_start_right_after_create
                          test_changelog_not_compacted_refused
                          test_changelog_policy_unknown)
set_tests_properties(it_topology_check.test_apply_then_start
                     it_topology_check.test_apply_new_source
                     it_topology_check.test_start_right_after_create
                     it_topology_check.test_changelog_not_compacted_refused
                     PROPERTIES LABELS real)
add_dependencies(it_topology_check kretry_cli)
# The assertion messages quote the error text into a 2 KiB buffer (cut
# short there, which is harmless in a message).
target_compile_options(it_topology_check PRIVATE -Wno-format-truncation)
kretry_add_suite(it_buffer TIMEOUT 240 LABELS integration SOURCES it_harness.c)
kretry_add_suite(it_owner TIMEOUT 480 LABELS integration SOURCES it_harness.c)
# Each close runs in a child process (the suite's binary again), so that
# librdkafka's abort fails the test, not the suite.
kretry_add_suite(it_close TIMEOUT 240 LABELS integration SOURCES it_harness.c)
kretry_add_suite(it_denied TIMEOUT 120 LABELS integration SOURCES it_harness.c)
# routing=transactional: real Kafka only (the mock's transactions write no
# markers); label real lets the mock pass skip it.
kretry_add_suite(it_txn TIMEOUT 300 LABELS "integration;real;secure" SOURCES it_harness.c)
# Decided offsets handed from owner to owner; the chains need the mock's
# refused copies, the forged metadata runs on both; test_chain_transactional
# needs real Kafka (label real lets the mock pass skip it).
kretry_add_suite(it_decided TIMEOUT 300 LABELS integration SOURCES it_harness.c
                 SEPARATE test_chain_transactional)
set_tests_properties(it_decided.test_chain_transactional PROPERTIES LABELS real)
