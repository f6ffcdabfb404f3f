#!/bin/sh
# Checks that every C source follows the repository's .clang-format.
# Skipped (with a message) where clang-format is not installed.
set -eu
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null 2>&1; then
        echo "check-format: clang-format not installed; skipped"
        exit 0
fi
git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror
echo "check-format: $(git ls-files '*.c' '*.h' | wc -l) files formatted"
