#!/usr/bin/env bash
# What the end-to-end tests' host sides share (run.sh, hotplug.sh, tcp.sh source it, with `here`
# set to tests/e2e): the provisioned environment and the host checks' output.
#
#   require_provisioned LABEL   exits with 1, listing what provision.sh check finds missing,
#                               unless everything is provisioned; then sources env.sh
#   host_ok TEXT, host_fail TEXT  print "E2E ok: TEXT" or "E2E FAIL: TEXT" (counted in failures)
#   stop_processes PID...       kills each process (a server left running) and reaps it
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

stop_processes() {
    local pid
    for pid in "$@"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
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
