# The kretry command-line tool: its broker-free parts as CUnit suites, the
# commands themselves as black-box tests against the built binary.
kretry_add_suite(test_exec_handler LABELS unit
                 SOURCES ${PROJECT_SOURCE_DIR}/adapter/cli/exec_handler.c)
target_include_directories(test_exec_handler PRIVATE
                           ${PROJECT_SOURCE_DIR}/adapter/cli)
# The assertion macros format into a 2 KiB buffer; comparing the 4 KiB stderr
# line buffer makes GCC warn about a truncation that is harmless in a message.
target_compile_options(test_exec_handler PRIVATE -Wno-format-truncation)
