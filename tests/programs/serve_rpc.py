#!/usr/bin/env python3
"""Manages nvmekit-serve through its JSON-RPC socket with SPDK's method names, as scripts/rpc.py
would, then saves the configuration, restarts from it and compares nvmf_get_subsystems. A
VFIOUSER listener starts a function a vfio-user client reaches (VERSION, then NVMe registers read
from BAR0); removing it stops the function. A TCP listener takes NVMe/TCP connections (ICReq,
then an admin Connect) from the hosts the subsystem allows; a host removed loses its controller,
and a listener removed refuses connections. With --timing, a read takes at least the model's
latency, and an untimed write sent behind it completes first. Without -r, the management socket
is nvmekit.sock in XDG_RUNTIME_DIR.

Every check raises CheckFailed with what failed (never a bare assert, which python -O drops);
the script then exits 1.

    serve_rpc.py PATH-TO-nvmekit-serve WORK-DIRECTORY
"""

import inspect
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time


class CheckFailed(Exception):
    """A check of this script failed."""


def _caller():
    """The line of the script that called a check: its number and its text."""
    frame = inspect.stack()[2]
    text = frame.code_context[0].strip() if frame.code_context else ""
    return f"line {frame.lineno}: {text}"


def check(condition, *details):
    """Raises CheckFailed, naming the calling line and `details`, when `condition` is false."""
    if not condition:
        raise CheckFailed(" ".join([_caller(), *(repr(d) for d in details)]))


def equal(actual, expected):
    """Raises CheckFailed unless `actual` equals `expected` and is of its type (so that 1 is not
    taken for True)."""
    if type(actual) is not type(expected) or actual != expected:
        raise CheckFailed(f"{_caller()}: expected {expected!r}, got {actual!r}")


def call(path, method, params=None):
    """One request on a fresh connection, as rpc.py sends it; the parsed response."""
    request = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        request["params"] = params
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        s.sendall(json.dumps(request, indent=2).encode())
        buffer = b""
        while not buffer.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError(f"{method}: connection closed")
            buffer += chunk
    return json.loads(buffer)


def result(path, method, params=None):
    response = call(path, method, params)
    if "result" not in response:
        raise CheckFailed(f"{method} {params}: {response}")
    return response["result"]


def error(path, method, params=None):
    response = call(path, method, params)
    if "error" not in response:
        raise CheckFailed(f"{method} {params}: expected an error, got {response}")
    return response["error"]


def vfio_user_message(s, message_id, command, payload):
    """Sends a vfio-user command; the reply's payload (an error reply raises)."""
    s.sendall(struct.pack("<HHIII", message_id, command, 16 + len(payload), 0, 0) + payload)
    header = b""
    while len(header) < 16:
        header += s.recv(16 - len(header))
    reply_id, reply_command, size, flags, error_number = struct.unpack("<HHIII", header)
    check(reply_id == message_id and reply_command == command, (reply_id, reply_command))
    body = b""
    while len(body) < size - 16:
        body += s.recv(size - 16 - len(body))
    if flags & 0x20:
        raise CheckFailed(f"vfio-user command {command}: error {error_number}")
    return body


def nvme_version(path):
    """VS, read from BAR0 over vfio-user after the version handshake."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        vfio_user_message(s, 1, 1, struct.pack("<HH", 0, 0) + b'{"capabilities":{"max_msg_fds":8}}\0')
        # REGION_WRITE: Memory Space Enable in the PCI command register (config space, region 7).
        vfio_user_message(s, 2, 10, struct.pack("<QIIH", 4, 7, 2, 0x0002))
        reply = vfio_user_message(s, 3, 9, struct.pack("<QII", 8, 0, 4))  # REGION_READ: VS in BAR0
        return struct.unpack("<I", reply[16:20])[0]


def free_tcp_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def receive_exactly(s, size):
    data = b""
    while len(data) < size:
        chunk = s.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def tcp_connect(port, subnqn, hostnqn, qid=0, cntlid=0xFFFF):
    """An NVMe/TCP connection: ICReq, then Connect (an admin queue with CNTLID FFFFh, or I/O queue
    `qid` of controller `cntlid`) with its data in the capsule. The socket (None when refused) and
    the Connect's (status, CNTLID)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    # ICReq: PDU type 0, HLEN = PLEN = 128, PFV 0, HPDA 0, no digests, MAXR2T 0.
    s.sendall(struct.pack("<BBBBI", 0, 0, 128, 0, 128) + bytes(120))
    icresp = receive_exactly(s, 128)
    check(icresp[0] == 1 and struct.unpack("<I", icresp[4:8])[0] == 128, icresp[:8])
    # Connect: opcode 7Fh, SGL (PSDT 01b), FCTYPE 01h; an in-capsule Data Block (offset) of 1024 bytes.
    sqe = bytearray(64)
    sqe[0], sqe[1] = 0x7F, 0x40
    struct.pack_into("<H", sqe, 2, 1)
    sqe[4] = 0x01
    struct.pack_into("<QIxxxB", sqe, 24, 0, 1024, 0x01)
    struct.pack_into("<HHHBxI", sqe, 40, 0, qid, 31, 0, 0)  # RECFMT, QID, SQSIZE 31, CATTR, KATO 0
    data = bytearray(1024)
    data[0:16] = bytes(range(1, 17))
    struct.pack_into("<H", data, 16, cntlid)
    data[256:256 + len(subnqn)] = subnqn.encode()
    data[512:512 + len(hostnqn)] = hostnqn.encode()
    s.sendall(struct.pack("<BBBBI", 4, 0, 72, 72, 72 + 1024) + bytes(sqe) + bytes(data))
    response = receive_exactly(s, 24)
    check(response[0] == 5, response[:8])
    dw0, _, _, _, _, status = struct.unpack("<IIHHHH", response[8:24])
    return s, ((status >> 1) & 0x7FF, dw0 & 0xFFFF)  # SCT and SC, without DNR and More


def tcp_command(s, sqe, data=b""):
    """Sends a command capsule (with `data` in it) and reads until its completion: the status
    (SCT and SC), CQE DW0 and the data a read returned."""
    s.sendall(struct.pack("<BBBBI", 4, 0, 72, 72 if data else 0, 72 + len(data)) + bytes(sqe) + bytes(data))
    received = b""
    while True:
        common = receive_exactly(s, 8)
        kind, flags, _, pdo, plen = struct.unpack("<BBBBI", common)
        pdu = common + receive_exactly(s, plen - 8)
        if kind == 7:  # C2HData; SUCCESS (flags bit 3) means no response capsule follows
            received += pdu[pdo:]
            if flags & 0x08:
                return 0, 0, received
        else:
            check(kind == 5, pdu[:8])
            dw0, _, _, _, _, status = struct.unpack("<IIHHHH", pdu[8:24])
            return (status >> 1) & 0x7FF, dw0, received


def nvm_command(opcode, cid, slba=0, length=0, cdw=(), to_host=False):
    """An NVM command on namespace 1 whose data (`length` bytes) is in the capsule, or comes back
    in C2HData PDUs when `to_host`; `cdw` are its CDW10 onwards."""
    sqe = bytearray(64)
    sqe[0], sqe[1] = opcode, 0x40  # PSDT 01b: SGL
    struct.pack_into("<HI", sqe, 2, cid, 1)
    # SGL: Transport Data Block (5h, subtype Ah) to the host, else Data Block at an offset (0h, 1h).
    struct.pack_into("<QIxxxB", sqe, 24, 0, length, 0x5A if to_host else 0x01)
    for i, value in enumerate(cdw or struct.unpack("<III", struct.pack("<QI", slba, length // 512 - 1))):
        struct.pack_into("<I", sqe, 40 + 4 * i, value)
    return sqe


def tcp_enable(s):
    """Enables the controller of admin connection `s`: Property Set CC (EN, IOSQES 6, IOCQES 4),
    then Property Get CSTS until RDY."""
    def property_command(fctype, offset, value=0):
        sqe = bytearray(64)
        sqe[0], sqe[4] = 0x7F, fctype
        struct.pack_into("<BxxxIQ", sqe, 40, 0, offset, value)  # ATTRIB: 4 bytes
        return sqe
    equal(tcp_command(s, property_command(0x00, 0x14, 0x460001))[0], 0)
    deadline = time.monotonic() + 5
    while not tcp_command(s, property_command(0x04, 0x1C))[1] & 1:
        check(time.monotonic() < deadline, "CSTS.RDY stayed 0")
        time.sleep(0.01)


DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"


def discovery_entries(port, hostnqn):
    """The Discovery log page's entries of the discovery controller at `port`, as (SUBTYPE,
    TRADDR, TRSVCID, SUBNQN)."""
    s, (status, _) = tcp_connect(port, DISCOVERY_NQN, hostnqn)
    check(status == 0, hex(status))
    tcp_enable(s)
    size = 4096  # the header and three entries: this discovery subsystem, the subsystem, a referral
    status, _, log = tcp_command(s, nvm_command(0x02, 2, length=size, cdw=(0x70 | ((size // 4 - 1) << 16),),
                                                to_host=True))  # Get Log Page 70h
    s.close()
    check(status == 0, hex(status))
    records = struct.unpack("<Q", log[8:16])[0]
    text = lambda field: field.rstrip(b"\0 ").decode()
    return [(e[2], text(e[512:768]), text(e[32:64]), text(e[256:512]))
            for e in (log[1024 * (i + 1):1024 * (i + 2)] for i in range(records))]


def start(program, *arguments, wait_for, env=None):
    process = subprocess.Popen([program, *arguments], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 10
    while not all(os.path.exists(p) for p in wait_for):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise CheckFailed(f"{arguments}: no socket; output {process.communicate()[0]!r}")
        time.sleep(0.02)
    return process


def stop(process):
    process.terminate()
    output = process.communicate(timeout=20)[0]
    if process.returncode != 0:
        raise CheckFailed(f"exit {process.returncode}: {output!r}")


def capsule(sqe, data=b""):
    """A command capsule PDU: `sqe` with `data` in it."""
    return struct.pack("<BBBBI", 4, 0, 72, 72 if data else 0, 72 + len(data)) + bytes(sqe) + bytes(data)


def tcp_completions(s, count):
    """Reads PDUs until `count` commands completed: their CIDs in the order they completed, and
    for each CID its status (SCT and SC) and the data a read returned."""
    order, results, received = [], {}, {}
    while len(order) < count:
        common = receive_exactly(s, 8)
        kind, flags, _, pdo, plen = struct.unpack("<BBBBI", common)
        pdu = common + receive_exactly(s, plen - 8)
        if kind == 7:  # C2HData, CCCID at byte 8; SUCCESS (flags bit 3): no response capsule follows
            cid = struct.unpack("<H", pdu[8:10])[0]
            received[cid] = received.get(cid, b"") + pdu[pdo:]
            if flags & 0x08:
                order.append(cid)
                results[cid] = (0, received[cid])
        else:
            check(kind == 5, pdu[:8])
            _, _, _, _, cid, status = struct.unpack("<IIHHHH", pdu[8:24])
            order.append(cid)
            results[cid] = ((status >> 1) & 0x7FF, received.get(cid, b""))
    return order, results


def timed_read(program):
    """--timing simple:read-us=50000 over NVMe/TCP: the model times reads at 50 ms and writes at
    nothing. What it decides is checked, not how fast the machine is: a read completes no sooner
    than 50 ms after it was sent (a lower bound that load cannot break), and a write sent right
    behind a read, in the same segment, completes before it (due at once, the read 50 ms later)."""
    latency = 0.050
    port = free_tcp_port()
    nqn = "nqn.2026-11.io.nvmekit:timed"
    host = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000cc"
    serve = start(program, "--tcp", f"127.0.0.1:{port}", "--ram", "16M", "--nqn", nqn,
                  "--timing", f"simple:read-us={int(latency * 1e6)},parallelism=4", wait_for=[])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                admin, (status, cntlid) = tcp_connect(port, nqn, host)
                break
            except OSError:
                check(time.monotonic() < deadline and serve.poll() is None, "no NVMe/TCP listener")
                time.sleep(0.02)
        equal(status, 0)
        tcp_enable(admin)
        io, (status, _) = tcp_connect(port, nqn, host, qid=1, cntlid=cntlid)
        equal(status, 0)
        first = bytes(range(256)) * 2
        second = bytes(reversed(first))
        io.sendall(capsule(nvm_command(0x01, 1, slba=5, length=512), first))  # Write
        order, results = tcp_completions(io, 1)
        equal(results[1], (0, b""))
        # A read of LBA 5 and, behind it, a write of LBA 9: the write completes first.
        began = time.monotonic()
        io.sendall(capsule(nvm_command(0x02, 2, slba=5, length=512, to_host=True)) +
                   capsule(nvm_command(0x01, 3, slba=9, length=512), second))
        order, results = tcp_completions(io, 2)
        read_time = time.monotonic() - began
        equal(order, [3, 2])
        equal(results[3], (0, b""))
        equal(results[2], (0, first))
        check(read_time >= latency, f"the read completed {read_time:.4f} s after it was sent, before {latency} s")
        # A read alone: the model's latency again, and the data the write wrote.
        began = time.monotonic()
        io.sendall(capsule(nvm_command(0x02, 4, slba=9, length=512, to_host=True)))
        order, results = tcp_completions(io, 1)
        read_time = time.monotonic() - began
        equal(results[4], (0, second))
        check(read_time >= latency, f"the read completed {read_time:.4f} s after it was sent, before {latency} s")
        io.close()
        admin.close()
    finally:
        stop(serve)


def main():
    program, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "vm0"))
    rpc = os.path.join(work, "rpc.sock")
    nqn = "nqn.2016-06.io.spdk:cnode1"

    serve = start(program, "-r", rpc, wait_for=[rpc])
    try:
        check(result(rpc, "spdk_get_version")["version"].startswith("nvmekit v"))
        methods = result(rpc, "rpc_get_methods")
        for name in ("nvmf_create_transport", "nvmf_subsystem_add_ns", "framework_get_config", "bdev_malloc_create"):
            check(name in methods, name)
        equal(result(rpc, "bdev_malloc_create", {"name": "Malloc0", "num_blocks": 2048, "block_size": 512}), "Malloc0")
        equal(result(rpc, "nvmf_create_transport", {"trtype": "VFIOUSER"}), True)
        equal(result(rpc, "nvmf_create_subsystem", {"nqn": nqn, "allow_any_host": True, "serial_number": "SPDK01",
                                                     "ana_reporting": False, "passthrough": False,
                                                     "enable_nssr": False}), True)
        equal(result(rpc, "nvmf_subsystem_add_ns", {"nqn": nqn, "namespace": {"bdev_name": "Malloc0"}}), 1)
        vm0 = {"trtype": "VFIOUSER", "adrfam": "IPv4", "traddr": os.path.join(work, "vm0"), "trsvcid": "0"}
        equal(result(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn, "listen_address": vm0}), True)
        # The listener is a function: NVMe 2.0 registers behind its socket.
        cntrl = os.path.join(work, "vm0", "cntrl")
        equal(nvme_version(cntrl), 0x00020000)
        # No host has the controller running: no controller, no queue pair, one idle poll group.
        equal(result(rpc, "nvmf_subsystem_get_controllers", {"nqn": nqn}), [])
        equal(result(rpc, "nvmf_subsystem_get_qpairs", {"nqn": nqn}), [])
        stats = result(rpc, "nvmf_get_stats")
        check([g["current_admin_qpairs"] for g in stats["poll_groups"]] == [0], stats)
        # A namespace added and removed while the function runs.
        equal(result(rpc, "bdev_null_create", {"name": "Null1", "num_blocks": 64, "block_size": 4096}), "Null1")
        equal(result(rpc, "nvmf_subsystem_add_ns", {"nqn": nqn, "namespace": {"bdev_name": "Null1"}}), 2)
        equal(result(rpc, "nvmf_subsystem_remove_ns", {"nqn": nqn, "nsid": 2}), True)
        equal(result(rpc, "bdev_null_delete", {"name": "Null1"}), True)
        equal(result(rpc, "nvmf_subsystem_remove_listener", {"nqn": nqn, "listen_address": vm0}), True)
        check(not os.path.exists(cntrl), "the function outlived its listener")
        equal(result(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn, "listen_address": vm0}), True)
        equal(nvme_version(cntrl), 0x00020000)
        # A second subsystem's function goes with the subsystem.
        os.makedirs(os.path.join(work, "vm1"))
        equal(result(rpc, "nvmf_create_subsystem", {"nqn": nqn + "x"}), True)
        equal(result(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn + "x", "listen_address": dict(
            vm0, traddr=os.path.join(work, "vm1"))}), True)
        equal(result(rpc, "nvmf_delete_subsystem", {"nqn": nqn + "x"}), True)
        check(not os.path.exists(os.path.join(work, "vm1", "cntrl")))
        equal(error(rpc, "bdev_malloc_delete", {"name": "Malloc0"})["code"], -16)
        equal(error(rpc, "nvmf_create_subsystem", {"nqn": nqn})["code"], -32603)
        equal(error(rpc, "nvmf_subsystem_add_ns", {"nqn": nqn})["code"], -32602)
        equal(error(rpc, "no_such_method")["code"], -32601)
        # A TCP listener: the allowed host connects, another is refused, a host removed loses its
        # controller, the listener removed takes no more connections.
        port = free_tcp_port()
        tcp = {"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1", "trsvcid": str(port)}
        host = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa"
        other = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000bb"
        check(error(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn, "listen_address": tcp})["code"] != 0)
        equal(result(rpc, "nvmf_create_transport", {"trtype": "TCP"}), True)
        equal(result(rpc, "nvmf_subsystem_allow_any_host", {"nqn": nqn, "allow_any_host": False}), True)
        equal(result(rpc, "nvmf_subsystem_add_host", {"nqn": nqn, "host": host}), True)
        equal(result(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn, "listen_address": tcp}), True)
        refused, (status, _) = tcp_connect(port, nqn, other)
        refused.close()
        check(status == 0x184, hex(status))  # Connect Invalid Host
        admin, (status, cntlid) = tcp_connect(port, nqn, host)
        check(status == 0, hex(status))
        controllers = result(rpc, "nvmf_subsystem_get_controllers", {"nqn": nqn})
        check(controllers == [{"cntlid": cntlid, "hostnqn": host,
                                "hostid": "01020304-0506-0708-090a-0b0c0d0e0f10", "num_io_qpairs": 0}], controllers)
        qpairs = result(rpc, "nvmf_subsystem_get_qpairs", {"nqn": nqn})
        check([(q["qid"], q["listen_address"]["trsvcid"]) for q in qpairs] == [(0, str(port))], qpairs)
        check(any(g["transports"] == [{"trtype": "TCP"}] and g["current_admin_qpairs"] == 1
                   for g in result(rpc, "nvmf_get_stats")["poll_groups"]))
        # The namespace's I/O counts in its bdev's statistics.
        tcp_enable(admin)
        io, (status, _) = tcp_connect(port, nqn, host, qid=1, cntlid=cntlid)
        check(status == 0, hex(status))
        written = bytes(range(256)) * 2
        equal(tcp_command(io, nvm_command(0x01, 1, slba=3, length=512), written)[0], 0)  # Write
        status, _, read = tcp_command(io, nvm_command(0x02, 2, slba=3, length=512, to_host=True))  # Read
        check(status == 0 and read == written, (hex(status), read[:16]))
        deallocate = struct.pack("<IIQ", 0, 8, 16)  # 8 blocks from LBA 16
        equal(tcp_command(io, nvm_command(0x09, 3, length=16, cdw=(0, 0x4)), deallocate)[0], 0)  # DSM, AD
        equal(tcp_command(io, nvm_command(0x00, 4, cdw=(0,)))[0], 0)  # Flush: not counted
        io.close()
        stats = result(rpc, "bdev_get_iostat", {"name": "Malloc0", "reset_mode": "all"})["bdevs"][0]
        check((stats["num_write_ops"], stats["bytes_written"], stats["num_read_ops"], stats["bytes_read"],
                stats["num_unmap_ops"], stats["bytes_unmapped"]) == (1, 512, 1, 512, 1, 4096), stats)
        check(stats["max_read_latency_ticks"] == stats["min_read_latency_ticks"] == stats["read_latency_ticks"])
        equal(result(rpc, "bdev_get_iostat", {"name": "Malloc0"})["bdevs"][0]["num_write_ops"], 0)
        equal(result(rpc, "nvmf_subsystem_remove_host", {"nqn": nqn, "host": host}), True)
        check(admin.recv(1) == b"", "the removed host's connection stayed open")
        admin.close()
        equal(result(rpc, "nvmf_subsystem_get_controllers", {"nqn": nqn}), [])
        equal(result(rpc, "nvmf_subsystem_add_host", {"nqn": nqn, "host": host}), True)
        equal(result(rpc, "nvmf_subsystem_remove_listener", {"nqn": nqn, "listen_address": tcp}), True)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            raise CheckFailed("the listener outlived its removal")
        except ConnectionRefusedError:
            pass
        equal(result(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn, "listen_address": tcp}), True)
        # A referral to another discovery service: listed by the method and by the listener's
        # discovery controller, after the discovery subsystem's own entry (SUBTYPE 3) and the
        # subsystem (SUBTYPE 2), as a referral (SUBTYPE 1).
        referral = {"trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.2", "trsvcid": "8009"}
        equal(result(rpc, "nvmf_discovery_add_referral", {"address": referral}), True)
        equal(result(rpc, "nvmf_discovery_get_referrals"), [
            {"address": referral, "secure_channel": False, "subnqn": DISCOVERY_NQN}])
        discovered = [(3, "127.0.0.1", str(port), DISCOVERY_NQN), (2, "127.0.0.1", str(port), nqn),
                      (1, "127.0.0.2", "8009", DISCOVERY_NQN)]
        check(discovery_entries(port, host) == discovered, discovery_entries(port, host))
        subsystems = result(rpc, "nvmf_get_subsystems")
        equal([s["nqn"] for s in subsystems], ["nqn.2014-08.org.nvmexpress.discovery", nqn])
        # What rpc.py's save_config does.
        config = {"subsystems": [
            {"subsystem": s["subsystem"], "config": result(rpc, "framework_get_config", {"name": s["subsystem"]})}
            for s in result(rpc, "framework_get_subsystems")]}
    finally:
        stop(serve)
    check(not os.path.exists(rpc), "the socket outlived the server")

    saved = os.path.join(work, "config.json")
    with open(saved, "w") as f:
        json.dump(config, f, indent=2)
    serve = start(program, "-r", rpc, "-c", saved, wait_for=[rpc])
    try:
        equal(result(rpc, "nvmf_get_subsystems"), subsystems)
        equal(nvme_version(os.path.join(work, "vm0", "cntrl")), 0x00020000)
        admin, (status, _) = tcp_connect(port, nqn, host)
        admin.close()
        check(status == 0, hex(status))
        # The referral came back with the configuration, before the listener it is listed by.
        equal(discovery_entries(port, host), discovered)
        equal(result(rpc, "nvmf_discovery_remove_referral", {"address": referral}), True)
        equal(discovery_entries(port, host), discovered[:2])
    finally:
        stop(serve)

    # A transport beyond this build's limits: the listener is refused, naming the option.
    serve = start(program, "-r", rpc, wait_for=[rpc])
    try:
        result(rpc, "nvmf_create_transport", {"trtype": "VFIOUSER", "max_queue_depth": 65536})
        result(rpc, "nvmf_create_subsystem", {"nqn": nqn})
        e = error(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn, "listen_address": vm0})
        check(e["code"] == -32603 and "max_queue_depth 65536" in e["message"], e)
        equal(result(rpc, "nvmf_get_subsystems")[1]["listen_addresses"], [])
    finally:
        stop(serve)

    # A configuration whose call fails: the program names it and does not start.
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        json.dump({"subsystems": [{"subsystem": "nvmf", "config": [
            {"method": "nvmf_subsystem_add_ns", "params": {"nqn": nqn, "namespace": {"bdev_name": "x"}}}]}]}, f)
    run = subprocess.run([program, "-r", rpc, "-c", bad], capture_output=True, text=True, timeout=20)
    check(run.returncode == 1 and "nvmf_subsystem_add_ns failed" in run.stdout, run)
    check(not os.path.exists(rpc))

    # The command-line device and the management socket together: the command line's bdev,
    # transports, subsystem, namespace, hosts and TCP listener are management's objects.
    device = os.path.join(work, "device.sock")
    port = free_tcp_port()
    serve = start(program, "--vfio-user", device, "--ram", "16M", "--max-namespaces", "2", "--nqn", nqn,
                  "--tcp", f"127.0.0.1:{port}", "--host", host, "-r", rpc, wait_for=[device, rpc])
    try:
        equal(sorted(t["trtype"] for t in result(rpc, "nvmf_get_transports")), ["TCP", "VFIOUSER"])
        bdevs = result(rpc, "bdev_get_bdevs")
        check([(b["name"], b["num_blocks"], b["block_size"], b["claimed"]) for b in bdevs] == [
            ("Malloc0", 32768, 512, True)], bdevs)
        cli = result(rpc, "nvmf_get_subsystems")[1]
        check(cli["nqn"] == nqn and cli["hosts"] == [{"nqn": host}] and not cli["allow_any_host"], cli)
        check([(n["nsid"], n["bdev_name"]) for n in cli["namespaces"]] == [(1, "Malloc0")], cli)
        check([(a["trtype"], a["trsvcid"]) for a in cli["listen_addresses"]] == [("TCP", str(port))], cli)
        equal(nvme_version(device), 0x00020000)
        admin, (status, _) = tcp_connect(port, nqn, host)
        check(status == 0, hex(status))
        equal(len(result(rpc, "nvmf_subsystem_get_controllers", {"nqn": nqn})), 1)
        refused, (status, _) = tcp_connect(port, nqn, other)
        refused.close()
        check(status == 0x184, hex(status))
        equal(result(rpc, "nvmf_subsystem_allow_any_host", {"nqn": nqn, "allow_any_host": True}), True)
        allowed, (status, _) = tcp_connect(port, nqn, other)
        allowed.close()
        admin.close()
        check(status == 0, hex(status))
        # A namespace added to it and removed; the subsystem itself cannot go.
        equal(result(rpc, "bdev_malloc_create", {"name": "Extra", "num_blocks": 1024, "block_size": 512}), "Extra")
        equal(result(rpc, "nvmf_subsystem_add_ns", {"nqn": nqn, "namespace": {"bdev_name": "Extra"}}), 2)
        equal(result(rpc, "nvmf_subsystem_remove_ns", {"nqn": nqn, "nsid": 2}), True)
        e = error(rpc, "nvmf_delete_subsystem", {"nqn": nqn})
        check(e["code"] == -32603 and "command line" in e["message"], e)
        equal([s["nqn"] for s in result(rpc, "nvmf_get_subsystems")], [
            "nqn.2014-08.org.nvmexpress.discovery", nqn])
        equal(error(rpc, "bdev_malloc_delete", {"name": "Malloc0"})["code"], -16)
        saved_nvmf = result(rpc, "framework_get_config", {"name": "nvmf"})
        check(any(c["method"] == "nvmf_subsystem_add_ns" and c["params"]["nqn"] == nqn for c in saved_nvmf))
    finally:
        stop(serve)
    # Without -r, the management socket is nvmekit.sock in the user's runtime directory
    # (XDG_RUNTIME_DIR), removed when the server stops.
    runtime = os.path.join(work, "runtime")
    os.makedirs(runtime, mode=0o700)
    empty = os.path.join(work, "empty.json")
    with open(empty, "w") as f:
        json.dump({"subsystems": []}, f)
    default = os.path.join(runtime, "nvmekit.sock")
    serve = start(program, "-c", empty, wait_for=[default], env={**os.environ, "XDG_RUNTIME_DIR": runtime})
    try:
        check(result(default, "spdk_get_version")["version"].startswith("nvmekit v"))
    finally:
        stop(serve)
    check(not os.path.exists(default), "the socket outlived the server")
    timed_read(program)
    shutil.rmtree(work)
    print("serve_rpc: ok")


if __name__ == "__main__":
    try:
        main()
    except CheckFailed as failure:
        print(f"serve_rpc: FAIL: {failure}", file=sys.stderr)
        sys.exit(1)
