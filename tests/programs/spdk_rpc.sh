#!/usr/bin/env bash
# Manages nvmekit-serve with SPDK's own client, scripts/rpc.py, run as its users run it: every
# method nvmekit serves is called through rpc.py's command line and its reply checked; a target
# is built (bdevs, transports, subsystems, namespaces, hosts, listeners, a referral), saved with
# `rpc.py save_config`, the server stopped (SIGTERM, exit 0) and started again from the file with
# -c; nvmf_get_subsystems, bdev_get_bdevs, nvmf_get_transports and nvmf_discovery_get_referrals
# must print what they printed before. Then the same file through `rpc.py load_config` into a
# fresh server, and save_config must write it again unchanged. Any step that fails ends the
# script with a message and exit status 1.
#
#     spdk_rpc.sh PATH-TO-nvmekit-serve PATH-TO-rpc.py WORK-DIRECTORY [PYTHON]
set -euo pipefail

if [[ $# -lt 3 || $# -gt 4 ]]; then
    echo "usage: spdk_rpc.sh PATH-TO-nvmekit-serve PATH-TO-rpc.py WORK-DIRECTORY [PYTHON]" >&2
    exit 2
fi
serve=$1
rpc_py=$2
work=$3
python=${4:-python3}
sock="$work/rpc.sock"
server_pid=
server_log=

fail() {
    echo "spdk_rpc: FAIL: $*" >&2
    if [[ -n $server_log && -f $server_log ]]; then
        echo "--- last lines of the server's output ($server_log):" >&2
        tail -n 30 "$server_log" >&2 || true
    fi
    exit 1
}

cleanup() {
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT

[[ -x $serve ]] || fail "$serve is not an executable program"
[[ -f $rpc_py ]] || fail "$rpc_py does not exist"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' ||
    fail "$python is not Python 3.9 or newer (rpc.py needs it)"

rm -rf "$work"
mkdir -p "$work/vm0"

# The methods called through rpc.py, to compare with what rpc_get_methods lists.
called=()

# rpc METHOD ARGS...: rpc.py's output of a call that must succeed (exit 0), in $out.
rpc() {
    called+=("$1")
    local status=0
    out=$("$python" "$rpc_py" -s "$sock" "$@" 2>&1) || status=$?
    [[ $status -eq 0 ]] || fail "rpc.py $*: exit $status: $out"
}

# rpc_error CODE METHOD ARGS...: a call that must fail with JSON-RPC error CODE (rpc.py exits 1
# and prints the error object); its output in $out.
rpc_error() {
    local code=$1
    shift
    called+=("$1")
    local status=0
    out=$("$python" "$rpc_py" -s "$sock" "$@" 2>&1) || status=$?
    [[ $status -eq 1 ]] || fail "rpc.py $*: expected exit 1 (error $code), got exit $status: $out"
    [[ $out == *"\"code\": $code,"* ]] || fail "rpc.py $*: expected error code $code in: $out"
}

# check TEXT EXPRESSION MESSAGE: TEXT parsed as JSON is v; EXPRESSION (Python) must be true.
check() {
    "$python" - "$1" "$2" "$3" <<'EOF' || fail "$3"
import json
import sys

text, expression, message = sys.argv[1:4]
try:
    v = json.loads(text)
except ValueError as e:
    sys.exit(f"spdk_rpc: {message}: not JSON ({e}): {text!r}")
if not eval("(" + expression + "\n)", {"v": v}):
    sys.exit(f"spdk_rpc: {message}: `{expression}` is false for {json.dumps(v)}")
EOF
}

# same NAME BEFORE AFTER: the two outputs must be identical.
same() {
    [[ $2 == "$3" ]] || fail "$1 differs after the restart:"$'\n'"$(diff <(echo "$2") <(echo "$3") || true)"
}

# start ARGS...: nvmekit-serve -r SOCKET ARGS... in the background, once its socket answers.
start() {
    server_log="$work/serve-$((${#called[@]})).log"
    "$serve" -r "$sock" "$@" >"$server_log" 2>&1 &
    server_pid=$!
    local tries=0
    until [[ -S $sock ]]; do
        kill -0 "$server_pid" 2>/dev/null || fail "nvmekit-serve -r $sock $* exited before its socket appeared"
        ((++tries <= 500)) || fail "nvmekit-serve -r $sock $*: no socket after 10 s"
        sleep 0.02
    done
}

# stop: SIGTERM, then the server must exit with status 0 and take its socket with it.
stop() {
    kill -TERM "$server_pid" || fail "nvmekit-serve (pid $server_pid) is not running"
    local status=0
    wait "$server_pid" || status=$?
    server_pid=
    [[ $status -eq 0 ]] || fail "nvmekit-serve exited with status $status on SIGTERM"
    [[ ! -e $sock ]] || fail "the socket $sock outlived the server"
}

free_port() {
    "$python" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# unix_accepts PATH: a server answers on the Unix socket PATH (a file left behind does not).
unix_accepts() {
    "$python" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.close()' "$1" || fail "nothing answers on $1"
}

# tcp_accepts PORT: a TCP connection to 127.0.0.1:PORT is accepted.
tcp_accepts() {
    "$python" -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()' "$1" ||
        fail "no listener on 127.0.0.1:$1"
}

nqn1=nqn.2016-06.io.spdk:cnode1
nqn2=nqn.2016-06.io.spdk:cnode2
host1=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000a1
host2=nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000a2
port=$(free_port)
truncate -s 4M "$work/aio0.img"

# ---------------------------------------------------------------------------------------------
# The first server: every method, and the target to save.
start

rpc spdk_get_version
check "$out" 'v["version"].startswith("nvmekit v") and set(v["fields"]) == {"major", "minor", "patch", "suffix"}' \
    "spdk_get_version"
rpc rpc_get_methods
methods=$out
check "$methods" 'isinstance(v, list) and "framework_get_config" in v and "nvmf_subsystem_add_ns" in v' \
    "rpc_get_methods lists the methods"
rpc rpc_get_methods --current --include-aliases
# At run time every method is callable but framework_start_init, which is for startup only.
check "$out" "set(v) == set($methods) - {'framework_start_init'}" \
    "rpc_get_methods --current --include-aliases: what is callable at run time"
rpc framework_get_subsystems
check "$out" 'v == [{"subsystem": "bdev", "depends_on": []}, {"subsystem": "nvmf", "depends_on": ["bdev"]}]' \
    "framework_get_subsystems"
# Initialisation is over: the server runs (no --wait-for-rpc), so this is Invalid State.
rpc_error -1 framework_start_init
[[ $out == *"not callable in the current state"* ]] || fail "framework_start_init: $out"

# bdevs: malloc (size in MiB, as rpc.py takes it), null, aio. The first unnamed malloc bdev is
# Malloc0, as SPDK names it; deleted, its name is free for the one kept.
rpc bdev_malloc_create 1 4096
[[ $out == Malloc0 ]] || fail "bdev_malloc_create without a name answered '$out', not Malloc0"
rpc bdev_get_bdevs -b Malloc0
check "$out" '[(b["num_blocks"], b["block_size"]) for b in v] == [(256, 4096)]' "the unnamed malloc bdev"
rpc bdev_malloc_delete Malloc0
rpc bdev_malloc_create -b Malloc0 -u 8a5b7ad2-3c6d-4a1e-9f00-1234567890ab 4 512
[[ $out == Malloc0 ]] || fail "bdev_malloc_create answered '$out', not Malloc0"
rpc bdev_null_create Null0 8 4096
[[ $out == Null0 ]] || fail "bdev_null_create answered '$out', not Null0"
rpc bdev_aio_create "$work/aio0.img" Aio0 512
[[ $out == Aio0 ]] || fail "bdev_aio_create answered '$out', not Aio0"
rpc bdev_get_bdevs
check "$out" '[(b["name"], b["num_blocks"], b["block_size"], b["product_name"]) for b in v] == [
    ("Malloc0", 8192, 512, "Malloc disk"), ("Null0", 2048, 4096, "Null disk"),
    ("Aio0", 8192, 512, "AIO disk")]' "bdev_get_bdevs lists the three"
rpc bdev_get_bdevs -b Malloc0
check "$out" 'len(v) == 1 and v[0]["uuid"] == "8a5b7ad2-3c6d-4a1e-9f00-1234567890ab" and not v[0]["claimed"]' \
    "bdev_get_bdevs -b Malloc0"
rpc_error -19 bdev_get_bdevs -b Missing
rpc bdev_null_create Null1 1 512
rpc bdev_null_delete Null1
truncate -s 1M "$work/aio1.img"
rpc bdev_aio_create "$work/aio1.img" Aio1
rpc bdev_aio_delete Aio1
rpc bdev_get_bdevs
check "$out" '[b["name"] for b in v] == ["Malloc0", "Null0", "Aio0"]' "the deleted bdevs are gone"
rpc bdev_get_iostat
check "$out" '"tick_rate" in v and [b["name"] for b in v["bdevs"]] == ["Malloc0", "Null0", "Aio0"]' \
    "bdev_get_iostat"
rpc bdev_get_iostat --names Aio0,Malloc0 --reset-mode error
check "$out" '[b["name"] for b in v["bdevs"]] == ["Aio0", "Malloc0"] and v["bdevs"][0]["io_error"] == {}' \
    "bdev_get_iostat --names --reset-mode error"

# Transports.
rpc nvmf_create_transport -t tcp -u 16384 -n 1023
rpc nvmf_create_transport -t VFIOUSER -q 64
rpc nvmf_get_transports
check "$out" 'sorted(t["trtype"] for t in v) == ["TCP", "VFIOUSER"]' "nvmf_get_transports lists both"
rpc nvmf_get_transports --trtype TCP
check "$out" 'len(v) == 1 and v[0]["io_unit_size"] == 16384 and v[0]["num_shared_buffers"] == 1023' \
    "nvmf_get_transports --trtype TCP keeps the options"

# Subsystems, namespaces, hosts, listeners.
rpc nvmf_create_subsystem "$nqn1" -s SPDK00000000000001 -d "nvmekit rpc.py test" -m 8
rpc nvmf_create_subsystem "$nqn2" -a
rpc nvmf_create_subsystem nqn.2016-06.io.spdk:gone
rpc nvmf_delete_subsystem nqn.2016-06.io.spdk:gone
rpc_error -32603 nvmf_create_subsystem "$nqn1"
rpc nvmf_subsystem_add_ns "$nqn1" Malloc0
rpc nvmf_subsystem_add_ns "$nqn1" Aio0 -n 5 -e 0102030405060708
rpc nvmf_subsystem_add_ns "$nqn2" Null0 -u 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9
rpc_error -16 bdev_malloc_delete Malloc0
rpc_error -32602 nvmf_subsystem_add_ns "$nqn1" Null0 -n 7 -i
[[ $out == *no_auto_visible* ]] || fail "nvmf_subsystem_add_ns -i: the refusal does not name no_auto_visible: $out"
rpc nvmf_subsystem_remove_ns "$nqn2" 1
rpc nvmf_subsystem_add_ns "$nqn1" Null0 -n 7
rpc nvmf_subsystem_remove_ns "$nqn1" 7
rpc_error -32602 nvmf_subsystem_remove_ns "$nqn1" 7
rpc nvmf_subsystem_add_ns "$nqn2" Null0 -u 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9
rpc nvmf_subsystem_add_host "$nqn1" "$host1"
rpc nvmf_subsystem_add_host "$nqn1" "$host2"
rpc nvmf_subsystem_remove_host "$nqn1" "$host2" -T 1000
rpc nvmf_subsystem_allow_any_host "$nqn2" --no-allow-any-host
rpc nvmf_subsystem_allow_any_host "$nqn2" --allow-any-host
rpc nvmf_subsystem_add_listener "$nqn1" -t tcp -a 127.0.0.1 -s "$port" -f ipv4
rpc nvmf_subsystem_add_listener "$nqn2" -t TCP -a 127.0.0.1 -s "$port"
rpc nvmf_subsystem_add_listener "$nqn1" -t VFIOUSER -a "$work/vm0" -s 0
unix_accepts "$work/vm0/cntrl"
rpc nvmf_subsystem_remove_listener "$nqn2" -t TCP -a 127.0.0.1 -s "$port" -f IPv4
rpc nvmf_discovery_add_referral -t tcp -a 127.0.0.2 -s 8009
rpc nvmf_discovery_add_referral -t tcp -a 127.0.0.3 -s 4420 -n "$nqn1" -k
rpc nvmf_discovery_remove_referral -t tcp -a 127.0.0.3 -s 4420 -n "$nqn1"
rpc nvmf_discovery_get_referrals
check "$out" 'v == [{"address": {"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.2", "trsvcid": "8009"},
                     "secure_channel": False, "subnqn": "nqn.2014-08.org.nvmexpress.discovery"}]' \
    "nvmf_discovery_get_referrals"
tcp_accepts "$port"

rpc nvmf_get_subsystems
check "$out" '[s["nqn"] for s in v] == ["nqn.2014-08.org.nvmexpress.discovery", "'"$nqn1"'", "'"$nqn2"'"]' \
    "nvmf_get_subsystems lists the discovery subsystem and the two"
check "$out" '[(n["nsid"], n["bdev_name"]) for n in v[1]["namespaces"]] == [(1, "Malloc0"), (5, "Aio0")]
    and v[1]["namespaces"][1]["eui64"] == "0102030405060708"
    and v[1]["hosts"] == [{"nqn": "'"$host1"'"}] and not v[1]["allow_any_host"]
    and v[1]["serial_number"] == "SPDK00000000000001" and v[1]["model_number"] == "nvmekit rpc.py test"
    and v[1]["max_namespaces"] == 8
    and sorted(a["trtype"] for a in v[1]["listen_addresses"]) == ["TCP", "VFIOUSER"]' "subsystem $nqn1"
check "$out" '[(n["nsid"], n["bdev_name"], n["uuid"]) for n in v[2]["namespaces"]] == [
    (1, "Null0", "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9")]
    and v[2]["allow_any_host"] and v[2]["listen_addresses"] == []' \
    "subsystem $nqn2"
rpc nvmf_get_subsystems "$nqn2"
check "$out" '[s["nqn"] for s in v] == ["'"$nqn2"'"]' "nvmf_get_subsystems NQN"
rpc nvmf_subsystem_get_controllers "$nqn1"
check "$out" 'v == []' "nvmf_subsystem_get_controllers: no host is connected"
rpc nvmf_subsystem_get_qpairs "$nqn1"
check "$out" 'v == []' "nvmf_subsystem_get_qpairs: no host is connected"
rpc nvmf_get_stats
check "$out" 'isinstance(v["tick_rate"], int) and isinstance(v["poll_groups"], list)' "nvmf_get_stats"
rpc_error -32602 nvmf_subsystem_get_controllers nqn.2016-06.io.spdk:none

rpc framework_get_config bdev
check "$out" '[(c["method"], c["params"]["name"]) for c in v] == [
    ("bdev_malloc_create", "Malloc0"), ("bdev_null_create", "Null0"), ("bdev_aio_create", "Aio0")]' \
    "framework_get_config bdev"
rpc framework_get_config nvmf --with-batches
check "$out" 'all(isinstance(c, dict) for c in v) and
    sum(c["method"] == "nvmf_subsystem_add_ns" for c in v) == 3' "framework_get_config nvmf --with-batches"
rpc save_config
saved=$out
called+=(framework_get_config) # what save_config calls, with with_batches
check "$saved" '[s["subsystem"] for s in v["subsystems"]] == ["bdev", "nvmf"]' "save_config"
echo "$saved" >"$work/config.json"

rpc nvmf_get_subsystems
before_subsystems=$out
rpc bdev_get_bdevs
before_bdevs=$out
rpc nvmf_get_transports
before_transports=$out
rpc nvmf_discovery_get_referrals
before_referrals=$out

# Every method rpc_get_methods lists was called through rpc.py.
missing=$("$python" -c 'import json, sys
print(" ".join(sorted(set(json.loads(sys.argv[1])) - set(sys.argv[2:]))))' "$methods" "${called[@]}") ||
    fail "rpc_get_methods: the list could not be compared"
[[ -z $missing ]] || fail "methods rpc_get_methods lists that were not called through rpc.py: $missing"
stop

# ---------------------------------------------------------------------------------------------
# Started again from the saved configuration: the same target.
start -c "$work/config.json"
rpc nvmf_get_subsystems
same nvmf_get_subsystems "$before_subsystems" "$out"
rpc bdev_get_bdevs
same bdev_get_bdevs "$before_bdevs" "$out"
rpc nvmf_get_transports
same nvmf_get_transports "$before_transports" "$out"
rpc nvmf_discovery_get_referrals
same nvmf_discovery_get_referrals "$before_referrals" "$out"
unix_accepts "$work/vm0/cntrl"
tcp_accepts "$port"
rpc save_config
same save_config "$saved" "$out"
stop

# ---------------------------------------------------------------------------------------------
# The same file through rpc.py load_config into a server started empty.
start
rpc load_config -j "$work/config.json"
rpc nvmf_get_subsystems
same "nvmf_get_subsystems (load_config)" "$before_subsystems" "$out"
rpc bdev_get_bdevs
same "bdev_get_bdevs (load_config)" "$before_bdevs" "$out"
rpc save_config
same "save_config (load_config)" "$saved" "$out"
stop

rm -rf "$work"
echo "spdk_rpc: ok (${#called[@]} calls through $rpc_py)"
