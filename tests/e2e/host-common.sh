#!/usr/bin/env bash
# What the end-to-end tests' host sides share (run.sh, hotplug.sh, tcp.sh source it, with `here`
# set to tests/e2e): the provisioned environment and the host checks' output.
#
#   require_provisioned LABEL   exits with 1, listing what provision.sh check finds missing,
#                               unless everything is provisioned; then sources env.sh
#   host_ok TEXT, host_fail TEXT  print "E2E ok: TEXT" or "E2E FAIL: TEXT" (counted in failures)
#   stop_server PID LOG NAME [SIGNAL]  stops a server with SIGNAL (INT by default); the check
#                               that it exited with 0 after logging "stopped"
#   stop_processes PID...       kills each process (a server left running) and reaps it; for
#                               cleaning up, it checks nothing
#   matching GREP-ARGUMENTS...  grep's matching lines; no match is no failure, grep's own is
#   json_value JSON EXPRESSION  the Python EXPRESSION over the parsed JSON (j), as JSON
#   copy_modules OUT NAME...    the guest kernel's modules NAME into OUT, in load order
#   free_port                   prints a TCP port nothing listens on
#   rpc METHOD [PARAMS-JSON]    one JSON-RPC call on the socket $rpc_sock

e2e_dir=${NVMEKIT_E2E_DIR:-/var/tmp/nvmekit-e2e}
failures=0

require_provisioned() {
    local missing
    missing=$(bash "$here/provision.sh" check 2>&1) || {
        echo "$1: FAILED: not provisioned (run: bash tests/e2e/provision.sh, as root); missing:"
        echo "$missing" | sed 's/^/  /'
        exit 1
    }
    # shellcheck disable=SC1091
    source "$e2e_dir/env.sh"
}

host_ok() { echo "E2E ok: $*"; }
host_fail() { echo "E2E FAIL: $*"; failures=$((failures + 1)); }

# stop_server PID LOG NAME [SIGNAL]: nvmekit-serve stops cleanly on SIGINT and on SIGTERM: it
# logs "stopped" and exits with 0. A server that had exited before the signal fails the check.
stop_server() {
    local signal=${4:-INT} status=0 sent=yes
    kill -s "$signal" "$1" 2>/dev/null || sent=no
    wait "$1" || status=$?
    if [ "$sent" = yes ] && [ "$status" -eq 0 ] && grep -q '\] stopped$' "$2"; then
        host_ok "$3 stopped on SIG$signal with status 0"
    else
        host_fail "$3 on SIG$signal: expected exit status 0 and 'stopped' in $2, got status $status$(
            [ "$sent" = yes ] || echo ' (it had exited before the signal)')"
    fi
}

stop_processes() {
    local pid
    for pid in "$@"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}

# matching GREP-ARGUMENTS...: the lines grep matches, for a check that wants none or some: no
# matching line is status 0 with nothing printed; grep's own failure (a file it cannot read)
# stays a failure, so that the check does not pass on a log that was never searched.
matching() {
    grep "$@" || [ $? -eq 1 ]
}

# json_value JSON EXPRESSION: prints the value of the Python EXPRESSION over the parsed JSON
# (named j) as JSON, or "error: ..." when JSON does not parse or the expression raises; the
# caller compares it with what it expects.
json_value() {
    python3 - "$1" "$2" <<'PY'
import json, sys
text, expression = sys.argv[1], sys.argv[2]
try:
    print(json.dumps(eval(expression, {"j": json.loads(text)})))
except Exception as e:
    print(f"error: {expression}: {type(e).__name__}: {e}")
PY
}

# copy_modules OUT NAME...: the guest kernel's modules NAME, named in load order, into OUT and
# their names into OUT/order. Each may depend only on nvme-core (which the base initramfs
# loads) and on modules named before it; another dependency fails the test (name it too).
copy_modules() {
    local out=$1 moddir module path dep
    shift
    moddir=$(find "$e2e_dir/guest/kernel/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    [ -n "$moddir" ] || { echo "e2e: FAILED: no extracted guest kernel in $e2e_dir/guest/kernel"; exit 1; }
    mkdir -p "$out"
    : >"$out/order"
    for module in "$@"; do
        path=$(find "$moddir" -name "$module.ko" | head -n 1)
        [ -n "$path" ] || { echo "e2e: FAILED: guest module $module.ko not found under $moddir"; exit 1; }
        for dep in $(modinfo -F depends "$path" | tr ',' ' '); do
            [ "$dep" = nvme-core ] || grep -qx "$dep.ko" "$out/order" \
                || { echo "e2e: FAILED: $module needs $dep, which is not named before it"; exit 1; }
        done
        cp "$path" "$out/$module.ko"
        echo "$module.ko" >>"$out/order"
    done
}

# free_port: a port nothing listens on (a server that cannot bind it fails the test)
free_port() {
    local candidate
    for _ in $(seq 1 50); do
        candidate=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "e2e: FAILED: no free port found" >&2
    exit 1
}

# rpc METHOD [PARAMS-JSON]: one call on the JSON-RPC socket $rpc_sock, as rpc.py makes it;
# prints the result, fails on an error
rpc() {
    python3 - "$rpc_sock" "$1" "${2:-}" <<'PY'
import json, socket, sys
path, method, params = sys.argv[1], sys.argv[2], sys.argv[3]
request = {"jsonrpc": "2.0", "id": 1, "method": method}
if params:
    request["params"] = json.loads(params)
with socket.socket(socket.AF_UNIX) as s:
    s.connect(path)
    s.sendall(json.dumps(request).encode())
    buffer = b""
    while not buffer.endswith(b"\n"):
        buffer += s.recv(65536)
response = json.loads(buffer)
if "error" in response:
    sys.exit(f"{method}: {response['error']}")
print(json.dumps(response["result"], sort_keys=True))
PY
}
