# Brokers dying under kretry, on a real three-node KRaft cluster
# (scripts/kafka.sh start --nodes 3): runs only with KRETRY_TEST_KAFKA3 set
# to its bootstrap (scripts/test.sh's real pass), skips otherwise. Broker
# fencing (~5 s) and restarts (~10 s) make each test take half a minute.
kretry_add_suite(it_cluster TIMEOUT 900 LABELS kafka3 SOURCES it_harness.c)
# it_worker (integration.cmake): the kretry processes test_kill_kretry kills.
add_dependencies(it_cluster it_worker)
target_compile_definitions(it_cluster PRIVATE
  IT_WORKER_PATH="$<TARGET_FILE:it_worker>")
