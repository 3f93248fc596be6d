#!/usr/bin/env bash
# Runs every browser end-to-end script (real Chromium via playwright-core) and prints a pass/fail tally.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -f designer/dist/index.html ] || npm run build:web
passed=0
failed=0
for f in test/e2e/*.e2e.ts; do
  echo "== $f"
  if timeout 900 npx tsx "$f"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $f"; fi
done
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
