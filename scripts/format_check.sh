#!/usr/bin/env bash
# Fails when a C++ file of the project is not formatted as .clang-format says
# (clang-format 14, Debian 12's). Generated code lives only in build trees.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
version=$([ -n "$fmt" ] && "$fmt" --version | grep -o 'version [0-9]*' | cut -d' ' -f2)
if [ "$version" != 14 ]; then
  echo "netdiag: format check wants clang-format 14, found ${version:-none}" >&2
  exit 2
fi
git ls-files '*.cc' '*.h' | xargs "$fmt" --dry-run --Werror
echo "netdiag: every C++ file is formatted" >&2
