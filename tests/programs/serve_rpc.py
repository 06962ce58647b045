#!/usr/bin/env python3
"""Manages nvmekit-serve through its JSON-RPC socket with SPDK's method names, as scripts/rpc.py
would, then saves the configuration, restarts from it and compares nvmf_get_subsystems. A
VFIOUSER listener starts a function a vfio-user client reaches (VERSION, then NVMe registers read
from BAR0); removing it stops the function.

    serve_rpc.py PATH-TO-nvmekit-serve WORK-DIRECTORY
"""

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time


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
        raise AssertionError(f"{method} {params}: {response}")
    return response["result"]


def error(path, method, params=None):
    response = call(path, method, params)
    if "error" not in response:
        raise AssertionError(f"{method} {params}: expected an error, got {response}")
    return response["error"]


def vfio_user_message(s, message_id, command, payload):
    """Sends a vfio-user command; the reply's payload (an error reply raises)."""
    s.sendall(struct.pack("<HHIII", message_id, command, 16 + len(payload), 0, 0) + payload)
    header = b""
    while len(header) < 16:
        header += s.recv(16 - len(header))
    reply_id, reply_command, size, flags, error_number = struct.unpack("<HHIII", header)
    assert reply_id == message_id and reply_command == command, (reply_id, reply_command)
    body = b""
    while len(body) < size - 16:
        body += s.recv(size - 16 - len(body))
    if flags & 0x20:
        raise AssertionError(f"vfio-user command {command}: error {error_number}")
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


def start(program, *arguments, wait_for):
    process = subprocess.Popen([program, *arguments], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 10
    while not all(os.path.exists(p) for p in wait_for):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"{arguments}: no socket; output {process.communicate()[0]!r}")
        time.sleep(0.02)
    return process


def stop(process):
    process.terminate()
    output = process.communicate(timeout=20)[0]
    if process.returncode != 0:
        raise AssertionError(f"exit {process.returncode}: {output!r}")


def main():
    program, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "vm0"))
    rpc = os.path.join(work, "rpc.sock")
    nqn = "nqn.2016-06.io.spdk:cnode1"

    serve = start(program, "-r", rpc, wait_for=[rpc])
    try:
        assert result(rpc, "spdk_get_version")["version"].startswith("nvmekit v")
        methods = result(rpc, "rpc_get_methods")
        for name in ("nvmf_create_transport", "nvmf_subsystem_add_ns", "framework_get_config", "bdev_malloc_create"):
            assert name in methods, name
        assert result(rpc, "bdev_malloc_create", {"name": "Malloc0", "num_blocks": 2048, "block_size": 512}) == "Malloc0"
        assert result(rpc, "nvmf_create_transport", {"trtype": "VFIOUSER"}) is True
        assert result(rpc, "nvmf_create_subsystem", {"nqn": nqn, "allow_any_host": True, "serial_number": "SPDK01",
                                                     "ana_reporting": False, "passthrough": False,
                                                     "enable_nssr": False}) is True
        assert result(rpc, "nvmf_subsystem_add_ns", {"nqn": nqn, "namespace": {"bdev_name": "Malloc0"}}) == 1
        vm0 = {"trtype": "VFIOUSER", "adrfam": "IPv4", "traddr": os.path.join(work, "vm0"), "trsvcid": "0"}
        assert result(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn, "listen_address": vm0}) is True
        # The listener is a function: NVMe 2.0 registers behind its socket.
        cntrl = os.path.join(work, "vm0", "cntrl")
        assert nvme_version(cntrl) == 0x00020000
        # No host has the controller running: no controller, no queue pair, one idle poll group.
        assert result(rpc, "nvmf_subsystem_get_controllers", {"nqn": nqn}) == []
        assert result(rpc, "nvmf_subsystem_get_qpairs", {"nqn": nqn}) == []
        stats = result(rpc, "nvmf_get_stats")
        assert [g["current_admin_qpairs"] for g in stats["poll_groups"]] == [0], stats
        # A namespace added and removed while the function runs.
        assert result(rpc, "bdev_null_create", {"name": "Null1", "num_blocks": 64, "block_size": 4096}) == "Null1"
        assert result(rpc, "nvmf_subsystem_add_ns", {"nqn": nqn, "namespace": {"bdev_name": "Null1"}}) == 2
        assert result(rpc, "nvmf_subsystem_remove_ns", {"nqn": nqn, "nsid": 2}) is True
        assert result(rpc, "bdev_null_delete", {"name": "Null1"}) is True
        assert result(rpc, "nvmf_subsystem_remove_listener", {"nqn": nqn, "listen_address": vm0}) is True
        assert not os.path.exists(cntrl), "the function outlived its listener"
        assert result(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn, "listen_address": vm0}) is True
        assert nvme_version(cntrl) == 0x00020000
        # A second subsystem's function goes with the subsystem.
        os.makedirs(os.path.join(work, "vm1"))
        assert result(rpc, "nvmf_create_subsystem", {"nqn": nqn + "x"}) is True
        assert result(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn + "x", "listen_address": dict(
            vm0, traddr=os.path.join(work, "vm1"))}) is True
        assert result(rpc, "nvmf_delete_subsystem", {"nqn": nqn + "x"}) is True
        assert not os.path.exists(os.path.join(work, "vm1", "cntrl"))
        assert error(rpc, "bdev_malloc_delete", {"name": "Malloc0"})["code"] == -16
        assert error(rpc, "nvmf_create_subsystem", {"nqn": nqn})["code"] == -32603
        assert error(rpc, "nvmf_subsystem_add_ns", {"nqn": nqn})["code"] == -32602
        assert error(rpc, "no_such_method")["code"] == -32601
        subsystems = result(rpc, "nvmf_get_subsystems")
        assert [s["nqn"] for s in subsystems] == ["nqn.2014-08.org.nvmexpress.discovery", nqn]
        # What rpc.py's save_config does.
        config = {"subsystems": [
            {"subsystem": s["subsystem"], "config": result(rpc, "framework_get_config", {"name": s["subsystem"]})}
            for s in result(rpc, "framework_get_subsystems")]}
    finally:
        stop(serve)
    assert not os.path.exists(rpc), "the socket outlived the server"

    saved = os.path.join(work, "config.json")
    with open(saved, "w") as f:
        json.dump(config, f, indent=2)
    serve = start(program, "-r", rpc, "-c", saved, wait_for=[rpc])
    try:
        assert result(rpc, "nvmf_get_subsystems") == subsystems
        assert nvme_version(os.path.join(work, "vm0", "cntrl")) == 0x00020000
    finally:
        stop(serve)

    # A transport beyond this build's limits: the listener is refused, naming the option.
    serve = start(program, "-r", rpc, wait_for=[rpc])
    try:
        result(rpc, "nvmf_create_transport", {"trtype": "VFIOUSER", "max_queue_depth": 65536})
        result(rpc, "nvmf_create_subsystem", {"nqn": nqn})
        e = error(rpc, "nvmf_subsystem_add_listener", {"nqn": nqn, "listen_address": vm0})
        assert e["code"] == -32603 and "max_queue_depth 65536" in e["message"], e
        assert result(rpc, "nvmf_get_subsystems")[1]["listen_addresses"] == []
    finally:
        stop(serve)

    # A configuration whose call fails: the program names it and does not start.
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        json.dump({"subsystems": [{"subsystem": "nvmf", "config": [
            {"method": "nvmf_subsystem_add_ns", "params": {"nqn": nqn, "namespace": {"bdev_name": "x"}}}]}]}, f)
    run = subprocess.run([program, "-r", rpc, "-c", bad], capture_output=True, text=True, timeout=20)
    assert run.returncode == 1 and "nvmf_subsystem_add_ns failed" in run.stdout, run
    assert not os.path.exists(rpc)

    # The command-line device and the management socket together.
    device = os.path.join(work, "device.sock")
    serve = start(program, "--vfio-user", device, "--ram", "16M", "-r", rpc, wait_for=[device, rpc])
    try:
        assert result(rpc, "nvmf_get_transports") == []
    finally:
        stop(serve)
    shutil.rmtree(work)
    print("serve_rpc: ok")


if __name__ == "__main__":
    main()
