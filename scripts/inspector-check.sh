#!/usr/bin/env bash
# Check memstore's MCP server with a second, independent client: the MCP Inspector's CLI mode
# (npm package @modelcontextprotocol/inspector, run through npx; needs Node.js and npm).
#
# Usage:   scripts/inspector-check.sh [PYTHON]
#          PYTHON defaults to .venv/bin/python (the install `make venv` creates).
# It builds a throw-away store in a temp folder, then lists tools, resources and prompts, stores a
# draft as one identity, refuses that identity's self-confirmation, confirms it as another,
# recalls it, runs ledger check → record → check (EXECUTED), reads the memory back as a resource,
# and prints "inspector-check: ok" or the first failed step (exit 1).
set -euo pipefail

PY="${1:-.venv/bin/python}"
PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")"
INSPECTOR="${INSPECTOR:-@modelcontextprotocol/inspector@0.15.0}"  # pinned; override to try another
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
STORE="$WORK/memory"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

"$PY" -m memstore --agent setup --store "$STORE" init >/dev/null

inspect() { # inspect AGENT ARGS... : one Inspector CLI call against a fresh `memstore serve`
  local agent="$1"; shift
  npx -y "$INSPECTOR" --cli -e MEMSTORE_AGENT="$agent" -e GIT_CONFIG_GLOBAL=/dev/null \
    -e GIT_CONFIG_NOSYSTEM=1 "$PY" -m memstore --store "$STORE" serve "$@"
}

expect() { # expect STEP PYTHON-EXPRESSION-ON-r : fail loudly unless the JSON on stdin satisfies it
  "$PY" -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$1" "$2" || { echo "inspector-check: FAILED at $1" >&2; exit 1; }
  echo "  ok  $1"
}

inspect a --method tools/list \
  | expect "tools/list names the memory and ledger tools" \
    '{"memory_store","memory_recall","memory_get","memory_update","memory_promote","ledger_check","ledger_claim","ledger_record"} <= {t["name"] for t in r["tools"]}'
inspect a --method resources/templates/list \
  | expect "resources/templates/list has memstore://memory/{name}" \
    'any(t["uriTemplate"] == "memstore://memory/{name}" for t in r["resourceTemplates"])'
inspect a --method prompts/list \
  | expect "prompts/list has session_start" 'any(p["name"] == "session_start" for p in r["prompts"])'
inspect a --method tools/call --tool-name memory_store --tool-arg name=inspector-note \
  --tool-arg type=fact --tool-arg 'description=Written through the MCP Inspector' \
  --tool-arg 'tags=["check"]' \
  | expect "memory_store saves a draft owned by a" \
    'not r.get("isError") and r["structuredContent"]["memory"]["owner"] == "a"'
inspect a --method tools/call --tool-name memory_promote --tool-arg name=inspector-note \
  --tool-arg to=confirmed --tool-arg reason=mine \
  | expect "self-confirmation is a tool error" \
    'r.get("isError") and "nobody confirms their own memory" in r["content"][0]["text"]'
inspect b --method tools/call --tool-name memory_promote --tool-arg name=inspector-note \
  --tool-arg to=confirmed --tool-arg 'reason=checked it' \
  | expect "b confirms it" 'r["structuredContent"]["memory"]["confirmed_by"] == "b"'
inspect b --method tools/call --tool-name memory_get --tool-arg 'names=["../etc/passwd"]' \
  | expect "a bad name is a tool error" 'r.get("isError") and "invalid name" in r["content"][0]["text"]'
inspect b --method tools/call --tool-name memory_recall --tool-arg 'query=inspector' \
  | expect "b recalls it with its status" \
    'r["structuredContent"]["results"][0]["status"] == "confirmed"'
inspect a --method tools/call --tool-name ledger_check --tool-arg action=publish \
  --tool-arg target=post-1 \
  | expect "ledger_check says NOT_EXECUTED" 'r["structuredContent"]["check"]["state"] == "NOT_EXECUTED"'
inspect a --method tools/call --tool-name ledger_record --tool-arg action=publish \
  --tool-arg target=post-1 --tool-arg 'evidence=not a url' \
  | expect "non-URL evidence is a tool error" 'r.get("isError")'
inspect a --method tools/call --tool-name ledger_record --tool-arg action=publish \
  --tool-arg target=post-1 --tool-arg evidence=https://blog.example.com/post-1 \
  | expect "ledger_record records it as done" 'r["structuredContent"]["event"]["status"] == "done"'
inspect b --method tools/call --tool-name ledger_check --tool-arg action=publish \
  --tool-arg target=post-1 \
  | expect "ledger_check now says EXECUTED" 'r["structuredContent"]["check"]["state"] == "EXECUTED"'
inspect b --method resources/read --uri memstore://memory/inspector-note \
  | expect "the memory reads back as a resource" \
    '"CONFIRMED by b (owner a)" in r["contents"][0]["text"]'
test -z "$(git -C "$STORE" status --porcelain)" || { echo "inspector-check: store not clean" >&2; exit 1; }
echo "inspector-check: ok ($INSPECTOR)"
