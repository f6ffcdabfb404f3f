# kretry ui: its request rules as a unit suite, its HTTP API as a black-box
# test against kretry dev-broker (kafka-python seeds the DLQ; python3-avro
# reads the export), and its page in headless Chromium; both on the real
# cluster in KRETRY_TEST_BOOTSTRAP when it is set (tests/bbkafka.py).
kretry_add_suite(test_ui_http LABELS unit
                 SOURCES ${PROJECT_SOURCE_DIR}/adapter/ui/ui_http.c)
target_include_directories(test_ui_http PRIVATE ${PROJECT_SOURCE_DIR}/adapter/ui)
kretry_add_suite(test_ui_history LABELS unit
                 SOURCES ${PROJECT_SOURCE_DIR}/adapter/ui/ui_history.c)
target_include_directories(test_ui_history PRIVATE ${PROJECT_SOURCE_DIR}/adapter/ui)
target_link_libraries(test_ui_history PRIVATE kretry_ops)
# The figures thread's pace on the mock cluster: idle, watched, woken.
kretry_add_suite(test_ui_figures TIMEOUT 120 LABELS integration
                 SOURCES ${PROJECT_SOURCE_DIR}/adapter/ui/ui_figures.c
                         ${PROJECT_SOURCE_DIR}/adapter/ui/ui_history.c)
target_include_directories(test_ui_figures PRIVATE ${PROJECT_SOURCE_DIR}/adapter/ui)
target_link_libraries(test_ui_figures PRIVATE kretry_ops)

# kretry ui joins no consumer group (label nogroup: scripts/test.sh runs
# these once on real Kafka, not again under the consumer group protocol).
# Exits 77 (skipped) when kafka-python or python3-avro is missing.
kretry_add_py_test(blackbox_ui SCRIPT blackbox_ui.py TIMEOUT 120
                   LABELS blackbox nogroup secure)

# Slow and hostile clients at the socket level: 200 stalled connections,
# one client's share, the idle timeout, and the request rules (one Host,
# the JSON media type, known filter values, the query's length).
kretry_add_py_test(blackbox_ui_limits SCRIPT blackbox_ui_limits.py TIMEOUT 120
                   LABELS blackbox nogroup)

# The page in headless Chromium: the rendered DOM shows the seeded rows and
# the overview's figures; the screenshot stays in artefacts/ui_page.png of
# the build directory. Exits 77 only where Chromium (or kafka-python) is
# not installed (scripts/install-deps.sh --test installs both).
kretry_add_py_test(browser_ui SCRIPT browser_ui.py TIMEOUT 180
                   LABELS blackbox nogroup
                   ARGS ${CMAKE_BINARY_DIR}/artefacts)
