#!/bin/sh
# What the guest's check scripts share: packed as /e2e/checks.sh next to /e2e/run and sourced
# by it. Each check prints "E2E ok: NAME ..." or "E2E FAIL: NAME: expected ..., got ..."; the
# script's last line is "E2E: result $failures".

failures=0
ok() { echo "E2E ok: $*"; }
fail() { echo "E2E FAIL: $*"; failures=$((failures + 1)); }
# expect NAME EXPECTED ACTUAL
expect() {
    if [ "$2" = "$3" ]; then ok "$1 = $3"; else fail "$1: expected $2, got $3"; fi
}
# run NAME COMMAND...: the command must succeed; its output is in /tmp/out
run() {
    name=$1
    shift
    if "$@" >/tmp/out 2>&1; then
        ok "$name"
    else
        fail "$name: '$*' exited with $?"
        cat /tmp/out
    fi
}
# dec VALUE: a 0x-prefixed hexadecimal or a decimal number, in decimal
dec() { printf '%d' "$1"; }
