# The kretry command-line tool: its broker-free parts as CUnit suites, the
# commands themselves as black-box tests against the built binary.
kretry_add_suite(test_exec_handler LABELS unit
                 SOURCES ${PROJECT_SOURCE_DIR}/adapter/run/exec_handler.c
                         ${PROJECT_SOURCE_DIR}/adapter/run/exec_guard.c)
target_include_directories(test_exec_handler PRIVATE
                           ${PROJECT_SOURCE_DIR}/adapter/run)
# The assertion macros format into a 2 KiB buffer; comparing the 4 KiB stderr
# line buffer makes GCC warn about a truncation that is harmless in a message.
target_compile_options(test_exec_handler PRIVATE -Wno-format-truncation)

# kretry run --http's rules: statuses, Retry-After, header text.
kretry_add_suite(test_http_rules LABELS unit
                 SOURCES ${PROJECT_SOURCE_DIR}/adapter/run/http_rules.c)
target_include_directories(test_http_rules PRIVATE
                           ${PROJECT_SOURCE_DIR}/adapter/run)
target_link_libraries(test_http_rules PRIVATE PkgConfig::CURL)
# As above: the verdict's 4 KiB message in a 2 KiB assertion message.
target_compile_options(test_http_rules PRIVATE -Wno-format-truncation)

# The black-box suites below start their own kretry dev-broker; with
# KRETRY_TEST_BOOTSTRAP=HOST:PORT in the environment they run on that real
# cluster instead, on topics and groups of their own (tests/bbkafka.py), and
# those that only the mock can run exit 77 with a "SKIPPED:" line saying why.

# kretry dev-broker against independent clients (kcat, kafka-python); exits
# 77 (skipped) when either is missing, and on a real cluster.
kretry_add_py_test(blackbox_dev_broker SCRIPT blackbox_dev_broker.py TIMEOUT 60
                   LABELS blackbox)

# kretry run with a shell handler on kretry dev-broker; needs kcat (77 when
# it is missing), uses kafka-python for a NUL-byte key when present.
kretry_add_py_test(blackbox_run SCRIPT blackbox_run.py TIMEOUT 90
                   LABELS blackbox)

# kretry run --concurrency: commands at once, one per key; needs kcat (77
# when it is missing).
kretry_add_py_test(blackbox_concurrency SCRIPT blackbox_concurrency.py TIMEOUT 90
                   LABELS blackbox)

# kretry run --http against an HTTP server the test starts (Python's
# http.server): routes: every answer class routes as specified, body and
# headers arrive byte for byte; concurrency: N requests at once and never
# more, one per key, in order; ahead: as many messages again handed to the
# handler, their requests built and waiting, never more open; down: the breaker opens while the endpoint is
# down and nothing is lost when it is back; topology: handler.http from a
# topology file; avro: --http-body json; tls: https with a CA and a client
# certificate; framing: a header that frames or routes the request, in a
# flag or in the topology file, refused with exit 64. Need kcat (avro:
# python3-avro, tls: openssl; 77 when missing).
foreach(mode routes concurrency ahead down topology avro tls framing)
  kretry_add_py_test(blackbox_http_${mode} SCRIPT blackbox_http.py TIMEOUT 90
                     LABELS blackbox secure ARGS ${mode})
endforeach()

# kretry run --metrics as an orchestrator and Prometheus see it: /readyz
# 503 while another member holds the group, 200 after the assignment (an
# idle member too) and 503 once SIGTERM arrives,
# /metrics following the messages handled, /healthz (503 while the polling
# thread is held past its bound), 404, 405, an address
# in use refused with 64; needs kcat (77 when it is missing).
kretry_add_py_test(blackbox_metrics SCRIPT blackbox_metrics.py TIMEOUT 120
                   LABELS blackbox secure)

# kretry run --exec's children: orphan: none outlives a SIGKILL of kretry;
# script, pipeline, compound, background: nor does any process of the
# handler's process group where the shell forks (the guard);
# forced: a second SIGTERM ends them and their background processes, exit
# 128 + SIGTERM; bound: a stop past revoke.timeout.ms sends SIGTERM to the
# commands still running, their process groups included, SIGKILL 2 s
# later, their offsets uncommitted; value: a 1 MiB value whole on stdin,
# KRETRY_VALUE_LEN its length. Need kcat (77 when it is missing).
foreach(mode orphan script pipeline compound background forced bound value)
  kretry_add_py_test(blackbox_exec_${mode} SCRIPT blackbox_exec.py TIMEOUT 90
                     LABELS blackbox ARGS ${mode})
endforeach()

# A malformed --http URL stops kretry run before it connects to anything.
add_test(NAME cli_http_bad_url
         COMMAND ${KRETRY_EXPECT} 64 "--http \"http://exa mple\.com/\": malformed URL"
                 $<TARGET_FILE:kretry_cli> run --bootstrap 127.0.0.1:1
                 --source s --group g --http "http://exa mple.com/")
set_tests_properties(cli_http_bad_url PROPERTIES LABELS cli)

# kretry run's shutdown stays bounded when the broker dies with the SIGTERM;
# needs kcat (77 when it is missing) and the mock (77 on a real cluster).
kretry_add_py_test(blackbox_shutdown SCRIPT blackbox_shutdown.py TIMEOUT 120
                   LABELS blackbox)

# The same bound on real Kafka (label real: 77 on the mock), the broker
# hung (SIGSTOP) and then dead (SIGKILL) with kretry's SIGTERM: exit 1
# within revoke.timeout.ms + 5 s. It starts a broker of its own
# (scripts/kafka.sh, KRETRY_KAFKA_PORT + 20): the shared one stays up.
kretry_add_py_test(blackbox_broker_gone SCRIPT blackbox_broker_gone.py
                   TIMEOUT 240 LABELS blackbox real)

# kretry demo runs the whole story on its embedded cluster: every order must
# reach an end (OK or the DLQ) and the table must show each route taken.
add_test(NAME cli_demo
         COMMAND ${KRETRY_EXPECT} 0 "done: 14 of 14 orders"
                 $<TARGET_FILE:kretry_cli> demo --quiet)
set_tests_properties(cli_demo PROPERTIES TIMEOUT 90 LABELS cli
  FAIL_REGULAR_EXPRESSION "incomplete|ERROR")
add_test(NAME cli_version
         COMMAND ${KRETRY_EXPECT} --stdout 0 "^kretry [0-9]+\\.[0-9]+\\.[0-9]+"
                 $<TARGET_FILE:kretry_cli> --version)
set_tests_properties(cli_version PROPERTIES LABELS cli)

# `cmake --install` yields a header, libraries and a kretry.pc a program
# builds against; only the public API is exported. The script fails on any
# step that fails, so the exit status decides.
add_test(NAME install_check
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/install_check.sh ${CMAKE_BINARY_DIR}
                 "${KRETRY_SANITIZER}" "${KRETRY_RDKAFKA_PCDIR}")
set_tests_properties(install_check PROPERTIES TIMEOUT 60 LABELS cli)

# examples/ built against a fresh install (find_package and pkg-config)
# and against the build tree's package, each example then run as a service
# on its own kretry dev-broker until SIGTERM (tests/examples_check.sh).
add_test(NAME examples_check
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/examples_check.sh ${CMAKE_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR} "${KRETRY_RDKAFKA_PCDIR}" "${KRETRY_SANITIZER}")
set_tests_properties(examples_check PROPERTIES TIMEOUT 120 LABELS cli
                     SKIP_RETURN_CODE 77)

# The manual pages render (man -l, no groff warning) and show the usage of
# the --help they are made from (tests/man_check.sh).
add_test(NAME man_pages
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/man_check.sh $<TARGET_FILE:kretry_cli>
                 ${CMAKE_BINARY_DIR}/man ${KRETRY_MAN_COMMANDS})
set_tests_properties(man_pages PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)

# Every command and sub-command answers --help with exit 0 and, on stdout, a
# usage naming that command: the top-level usage (what a command without
# --help might print) does not count.
foreach(cmd "demo" "run" "dev-broker" "topology" "topology validate"
            "topology describe" "topology plan" "topology apply"
            "topology acls" "dlq"
            "dlq inspect" "dlq replay" "dlq export" "stats" "ui")
  string(REPLACE " " ";" args "${cmd}")
  string(REPLACE " " "_" tname "${cmd}")
  add_test(NAME cli_help_${tname}
           COMMAND ${KRETRY_EXPECT} --stdout 0 "^(usage:)? +kretry ${cmd}( |$)"
                   $<TARGET_FILE:kretry_cli> ${args} --help)
  set_tests_properties(cli_help_${tname} PROPERTIES LABELS cli)
endforeach()

# kretry topology acls prints the bindings and the kafka-acls.sh command of
# each (the DLQ's Write for role run); --principal is required (64).
add_test(NAME cli_topology_acls
         COMMAND ${KRETRY_EXPECT} --stdout 0
                 "^kafka-acls.sh --bootstrap-server HOST:PORT .* --allow-principal User:svc --operation Write --topic orders.dlq$"
                 $<TARGET_FILE:kretry_cli> topology acls
                 ${PROJECT_SOURCE_DIR}/topology/examples/minimal.yaml
                 --principal User:svc)
add_test(NAME cli_topology_acls_principal
         COMMAND ${KRETRY_EXPECT} 64 "--principal TYPE:NAME is required"
                 $<TARGET_FILE:kretry_cli> topology acls
                 ${PROJECT_SOURCE_DIR}/topology/examples/minimal.yaml)
set_tests_properties(cli_topology_acls cli_topology_acls_principal
                     PROPERTIES LABELS cli)

# A stop (SIGTERM) that leaves offsets decided above an undecided one and a
# restart repeat nothing that was decided, under each ordering (the stop's
# commit metadata read with kafka-python); leave: the stopped member leaves the group
# at once (the one that stays is given its partitions before a session
# timeout). Need kcat (77 when it is missing).
foreach(ordering none partition key leave)
  kretry_add_py_test(blackbox_restart_${ordering} SCRIPT blackbox_restart.py TIMEOUT 150
                     LABELS blackbox ARGS ${ordering})
endforeach()

# kretry run's topology check as an operator meets it: dlq: a missing DLQ,
# changelog: a missing version changelog, refused with exit 1, the problem
# and the fix, and the check creates neither; compact: a changelog without
# compaction refused, on real Kafka only (the mock cannot answer
# DescribeConfigs: 77 there, label real). Need kcat (77 when missing).
foreach(mode dlq changelog compact)
  kretry_add_py_test(blackbox_topology_check_${mode} SCRIPT blackbox_topology_check.py TIMEOUT 90
                     LABELS blackbox ARGS ${mode})
endforeach()
if(EXISTS /usr/bin/python3)
  set_tests_properties(blackbox_topology_check_compact PROPERTIES
                       LABELS "blackbox;real")
endif()

# kretry run -X routing=transactional SIGKILLed twice mid-flow, on real
# Kafka only (77 on the mock, label real): read read_committed, no tier or
# DLQ copy twice, every message at its end. Needs kcat (77 when missing).
kretry_add_py_test(blackbox_txn_kill SCRIPT blackbox_txn_kill.py TIMEOUT 240
                   LABELS blackbox real)

# A restart in place with static membership (consumer.group.instance.id),
# on real Kafka only (77 on the mock, label real), under both group
# protocols: no rebalance reaches the other member, nothing lost, nothing
# handled twice. Needs kcat (77 when missing).
kretry_add_py_test(blackbox_static SCRIPT blackbox_static.py TIMEOUT 120
                   LABELS blackbox real)

# kretry on a SCRAM-SHA-256 and a SCRAM-SHA-512 login to real Kafka (the
# listener of scripts/kafka.sh start --scram, in KRETRY_TEST_SCRAM_BOOTSTRAP;
# 77 without one): topology apply, run, dlq inspect; a wrong password
# refused with the cluster's word.
kretry_add_py_test(blackbox_scram SCRIPT blackbox_scram.py TIMEOUT 480
                   LABELS blackbox real)

# No secret in anything kretry prints or serves (topology validate,
# describe, apply; run --verbose with debug=all, its /metrics; --exec and
# --http with --http-header; dlq inspect, replay --dry-run, export; stats;
# kretry ui's page and API),
# the password from a ${file:} and from ${VAR}: logged in with SCRAM on
# KRETRY_TEST_SCRAM_BOOTSTRAP, the same secrets merely configured on
# dev-broker.
kretry_add_py_test(blackbox_secrets SCRIPT blackbox_secrets.py TIMEOUT 240
                   LABELS blackbox)
# Not in the sanitizer pass (label nosanitizer): librdkafka 2.14.2 decodes
# the token's payload into a buffer it does not end with a NUL and parses
# it as a string (rd_kafka_jwt_b64_decode_payload, then cJSON_Parse): a
# heap over-read AddressSanitizer stops on, in librdkafka, whenever the
# payload's base64 needs no padding.
# OAUTHBEARER with OIDC client credentials passed through to librdkafka:
# it asks a token endpoint on loopback (in the script) with the client id
# and the secret (from ${file:}) and the scope; the secret and the token
# are in no output. On dev-broker always (no broker validates the token).
kretry_add_py_test(blackbox_oidc SCRIPT blackbox_oidc.py TIMEOUT 120
                   LABELS blackbox nogroup nosanitizer)

# kretry run logged in with a client certificate (mTLS) on the secured
# cluster of scripts/kafka.sh start --secure: every message handled, the
# poison one dead-lettered; without the certificate nothing is. Only the
# secured pass has that cluster (label secure-only: the other passes leave
# it out; 77 without one).
kretry_add_py_test(blackbox_mtls SCRIPT blackbox_mtls.py TIMEOUT 180
                   LABELS secure secure-only)

# The secured cluster itself opens no door: no anonymous or certificate-
# less client, no wrong password, no user without ACLs, and the service
# user only inside its names' prefix. Only the secured pass has it (77
# without).
kretry_add_py_test(blackbox_secure_cluster SCRIPT blackbox_secure_cluster.py TIMEOUT 180
                   LABELS secure secure-only)

# A permission lost while kretry runs, on the secured cluster: the DLQ's
# Write denied, a poison message: /readyz 503 within 5 s, the refusal
# counted and said once, one SIGTERM ends within 5 s, nothing lost (granted
# again, a second run dead-letters it). Only the secured pass has that
# cluster (77 without).
kretry_add_py_test(blackbox_secure_revoked SCRIPT blackbox_secure_revoked.py TIMEOUT 180
                   LABELS secure secure-only)

# Least privilege on a secured real cluster (scripts/kafka.sh start
# --secure, its SASL_SSL listener in KRETRY_TEST_SECURE_BOOTSTRAP, or the
# secured pass's KRETRY_TEST_BOOTSTRAP; only that pass has it, label
# secure-only; 77 without one): kretry run with exactly role run's bindings of `kretry
# topology acls` handles messages (also under routing: transactional), each
# binding removed is refused at start naming it; roles operator and ui work
# with exactly their bindings and need each; a wrong password is one error
# and a non-zero exit.
kretry_add_py_test(blackbox_acls SCRIPT blackbox_acls.py TIMEOUT 420
                   LABELS secure secure-only)

# The Debian packages build from debian/ (dpkg-buildpackage, on a copy of
# the tree) and lintian finds no error in them (scripts/package-deb.sh);
# scripts/deb-clean-check.sh installs them on a clean Debian 12 (root).
add_test(NAME deb_package
         COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/package-deb.sh ${CMAKE_BINARY_DIR}/deb)
set_tests_properties(deb_package PROPERTIES TIMEOUT 300 LABELS "package;nosanitizer"
                     SKIP_RETURN_CODE 77)
