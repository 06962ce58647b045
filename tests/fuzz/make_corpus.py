#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: real bring-up sequences and real commands,
encoded in each target's input format (see the targets' sources).

    python3 make_corpus.py                       # every target
    python3 make_corpus.py fuzz_commands ...     # only the named targets' directories

Seeds are numbered per target from seed-00, so running it again rewrites the same files."""
import os
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
selected = set(sys.argv[1:])
seed_counts = {}
HOST_BASE = 0x10000
ASQ, ACQ, IOSQ, IOCQ, DATA, PRPLIST = 0x1000, 0x2000, 0x3000, 0x4000, 0x8000, 0x6000


def bar_write(width_index, offset, value):
    return bytes([0, width_index]) + struct.pack("<HQ", offset, value)


def store(offset, data):
    out = b""
    while data:
        piece, data = data[:80], data[80:]
        out += bytes([3]) + struct.pack("<I", offset) + bytes([len(piece) - 1]) + piece
        offset += len(piece)
    return out


POLL = bytes([5])


def sqe(opcode, cid, nsid=0, prp1=0, prp2=0, cdw10=0, cdw11=0, cdw12=0, psdt=0, mptr=0):
    cdw0 = opcode | (psdt << 14) | (cid << 16)
    return struct.pack("<IIQQQQIIIIII", cdw0, nsid, 0, mptr, prp1, prp2, cdw10, cdw11, cdw12, 0, 0, 0)


def bring_up():
    out = bar_write(2, 0x24, (15 << 16) | 15)  # AQA: 16/16
    out += bar_write(3, 0x28, HOST_BASE + ASQ) + bar_write(3, 0x30, HOST_BASE + ACQ)
    out += bar_write(2, 0x14, 1 | (6 << 16) | (4 << 20))  # CC: EN, IOSQES 6, IOCQES 4
    return out + POLL


def admin(index, command):
    return store(ASQ + 64 * index, command) + bar_write(2, 0x1000, index + 1) + POLL


def io_queues():
    out = admin(0, sqe(0x06, 1, prp1=HOST_BASE + DATA, cdw10=1))  # Identify Controller
    out += admin(1, sqe(0x09, 2, cdw10=7, cdw11=0x00010001))  # Number of Queues
    out += admin(2, sqe(0x05, 3, prp1=HOST_BASE + IOCQ, cdw10=(15 << 16) | 1, cdw11=1 | 2))  # CQ 1
    out += admin(3, sqe(0x01, 4, prp1=HOST_BASE + IOSQ, cdw10=(15 << 16) | 1, cdw11=1 | (1 << 16)))  # SQ 1
    return out


def io(index, command):
    return store(IOSQ + 64 * index, command) + bar_write(2, 0x1008, index + 1) + POLL


def write_seed(name, data):
    if selected and name not in selected:
        return
    directory = os.path.join(here, "corpus", name)
    os.makedirs(directory, exist_ok=True)
    index = seed_counts.get(name, 0)
    seed_counts[name] = index + 1
    with open(os.path.join(directory, "seed-" + str(index).zfill(2)), "wb") as f:
        f.write(data)


# ---- fuzz_controller ----------------------------------------------------------------------------
base = bring_up() + io_queues()
write_seed("fuzz_controller", bring_up())
write_seed("fuzz_controller", base)
write_seed("fuzz_controller", base + io(0, sqe(0x01, 1, nsid=1, prp1=HOST_BASE + DATA, cdw12=7))
           + io(1, sqe(0x02, 2, nsid=1, prp1=HOST_BASE + DATA, cdw12=7)))
# A PRP list read of 16 KiB and an SGL read.
prp_list = b"".join(struct.pack("<Q", HOST_BASE + DATA + 0x1000 * i) for i in range(1, 4))
write_seed("fuzz_controller", base + store(PRPLIST, prp_list)
           + io(0, sqe(0x02, 1, nsid=1, prp1=HOST_BASE + DATA, prp2=HOST_BASE + PRPLIST, cdw12=31)))
sgl = struct.pack("<QII", HOST_BASE + DATA, 4096, 0)  # Data Block descriptor in DPTR
write_seed("fuzz_controller", base + io(0, struct.pack("<II", 0x02 | (1 << 14) | (1 << 16), 1) + bytes(16)
                                       + sgl + struct.pack("<IIIIII", 7, 0, 7, 0, 0, 0)))
# Dataset Management, Write Zeroes, Copy on namespace 2 (extended metadata), Format NVM, reset.
write_seed("fuzz_controller", base + store(DATA, struct.pack("<IIQ", 0, 8, 0))
           + io(0, sqe(0x09, 1, nsid=1, prp1=HOST_BASE + DATA, cdw11=4))
           + io(1, sqe(0x08, 2, nsid=2, cdw12=3))
           + admin(4, sqe(0x80, 5, nsid=1, cdw10=2))
           + bar_write(2, 0x14, 0) + POLL)
# Shutdown.
write_seed("fuzz_controller", base + bar_write(2, 0x14, 1 | (6 << 16) | (4 << 20) | (1 << 14)) + POLL)

# ---- fuzz_tcp_pdu_stream -----------------------------------------------------------------------
# Three bytes of target limits and read splitting, then a host's NVMe/TCP byte stream.
def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def tcp_pdu(pdu_type, flags, specific, data=b"", hdgst=False, ddgst=False, cpda=0):
    hlen = 8 + len(specific)
    header_end = hlen + (4 if hdgst else 0)
    alignment = (cpda + 1) * 4
    pdo = (header_end + alignment - 1) // alignment * alignment if data else 0
    flags |= (1 if hdgst else 0) | (2 if ddgst and data else 0)
    plen = (pdo + len(data) + (4 if ddgst else 0)) if data else header_end
    header = struct.pack("<BBBBI", pdu_type, flags, hlen, pdo, plen) + specific
    pdu = header + (struct.pack("<I", crc32c(header)) if hdgst else b"")
    if data:
        pdu += bytes(pdo - len(pdu)) + data + (struct.pack("<I", crc32c(data)) if ddgst else b"")
    return pdu


def tcp_exchange(hdgst, ddgst, cpda=0):
    icreq = tcp_pdu(0x00, 0, struct.pack("<HBBI", 0, 0, (1 if hdgst else 0) | (2 if ddgst else 0), 0) + bytes(112))
    write = sqe(0x01, 1, nsid=1, cdw12=0)
    connect = struct.pack("<BBHB", 0x7F, 0x40, 1, 0x01) + bytes(59)
    payload = bytes(range(256)) * 4
    return (icreq + tcp_pdu(0x04, 0, connect, payload, hdgst, ddgst, cpda)
            + tcp_pdu(0x04, 0, write, payload[:512], hdgst, ddgst, cpda)
            + tcp_pdu(0x04, 0, write, b"", hdgst, ddgst, cpda)
            + tcp_pdu(0x06, 0, struct.pack("<HHII", 1, 3, 0, 1000) + bytes(4), payload[:1000], hdgst, ddgst, cpda)
            + tcp_pdu(0x06, 4, struct.pack("<HHII", 1, 3, 1000, 24) + bytes(4), payload[:24], hdgst, ddgst, cpda))


write_seed("fuzz_tcp_pdu_stream", bytes([0x03, 0x05, 0x11]) + tcp_exchange(False, False))
write_seed("fuzz_tcp_pdu_stream", bytes([0x03, 0x25, 0x42]) + tcp_exchange(True, True))
write_seed("fuzz_tcp_pdu_stream", bytes([0x7F, 0x0F, 0x07]) + tcp_exchange(True, False, cpda=31))
write_seed("fuzz_tcp_pdu_stream", bytes([0x03, 0x00, 0x99]) + tcp_exchange(False, True)
           + tcp_pdu(0x02, 0, struct.pack("<HI", 1, 2) + bytes(10), bytes(72)))

# ---- fuzz_tcp_target ----------------------------------------------------------------------------
# Setup (connections, digests allowed, MAXH2CDATA, CPDA, close), limits (I/O in-capsule data,
# connect timeout, discovery, allowed hosts, linger), prefix (ICReq, admin Connect, enable and
# I/O Connects; digests, discovery, KATO), then steps: [kind | connection << 4 | send mode << 6, ...].
def tt_step(kind, conn=0, mode=0):
    return bytes([kind | (conn << 4) | (mode << 6)])


def tt_write(conn, blocks, slba=0, in_capsule=True):
    # Opcode index 12 (Write), NSID 1, data of 256-byte units, CDW10 SLBA, CDW11 0.
    return tt_step(6 if in_capsule else 5, conn) + bytes([12, 1, blocks * 2]) + struct.pack("<II", slba, 0)


def tt_read(conn, blocks, slba=0):
    return tt_step(5, conn) + bytes([1, 1, blocks * 2]) + struct.pack("<II", slba, 0)


def tt_h2c(conn, piece_units=None):
    return tt_step(7, conn) + bytes([0 if piece_units is None else 1 | ((piece_units - 1) << 1)])


TT_POLL = tt_step(11) + bytes([3])
TT_WAIT = tt_step(11) + bytes([0xc7])
# Three connections, everything allowed; an admin queue and two I/O queues: writes in the capsule
# and by R2T (in one H2CData and in 512-byte pieces), reads, Identify, Keep Alive, a Disconnect.
write_seed("fuzz_tcp_target", bytes([0x0e, 0x02, 0x03]) + tt_write(1, 2) + tt_read(1, 2)
           + tt_write(2, 8, 16, False) + TT_POLL + tt_h2c(2) + tt_read(2, 8, 16)
           + tt_write(1, 4, 32, False) + TT_POLL + tt_h2c(1, 1) + TT_POLL + tt_step(14) + tt_step(13)
           + tt_step(3) + bytes([4]) + tt_step(8, 2) + TT_POLL)
# Header and data digests, CPDA 3, writes and reads in pieces of 7 bytes.
write_seed("fuzz_tcp_target", bytes([0x5d, 0x01, 0x0f]) + tt_write(1, 2, 0) + tt_step(5, 1, 2)
           + bytes([1, 1, 4]) + struct.pack("<II", 0, 0) + bytes([6]) + tt_write(1, 8, 8, False) + TT_POLL + tt_h2c(1, 2)
           + tt_read(1, 8, 8) + tt_step(3) + bytes([0x4c]))
# The discovery controller: Identify, the Discovery log page, a feature, Keep Alive.
write_seed("fuzz_tcp_target", bytes([0x0c, 0x40, 0x13]) + tt_step(14) + tt_step(15) + TT_POLL
           + tt_step(6) + bytes([3, 0, 0]) + struct.pack("<II", 0x0f, 0) + tt_step(13) + TT_POLL)
# Step by step: an ICReq with HPDA 5 and digests, Connect, CC.EN = 1, Property Get CSTS, a read.
write_seed("fuzz_tcp_target", bytes([0x0c, 0x02, 0x00]) + tt_step(1) + bytes([0x65]) + tt_step(2)
           + bytes([0, 31, 0x30]) + tt_step(4) + bytes([0x03]) + TT_POLL + tt_step(3) + bytes([0x04])
           + tt_step(6) + bytes([2, 0, 0]) + struct.pack("<II", 7, 0x00030003)
           + tt_read(0, 8) + tt_step(5) + bytes([0, 0, 16]) + struct.pack("<II", 1, 0) + TT_POLL)
# Errors: an I/O Connect to a wrong controller and host, an H2CData outside its R2T, a corrupt
# header, an H2CTermReq.
write_seed("fuzz_tcp_target", bytes([0x0e, 0x03, 0x03]) + tt_step(2, 1) + bytes([2, 15, 0x01])
           + struct.pack("<H", 77) + tt_step(2, 2) + bytes([3, 15, 0x08]) + tt_write(0, 2, 0, False)
           + TT_POLL + tt_step(7, 0) + bytes([0x21, 0x40]) + TT_POLL + tt_write(1, 1, 0, True)
           + tt_step(10, 1, 1) + struct.pack("<HB", 2, 0x40) + tt_step(9, 2) + bytes([2]) + TT_POLL)
# KATO 100 ms: a Keep Alive in time, then none; a connection that never connects (connect
# timeout 0); a shutdown on another association.
write_seed("fuzz_tcp_target", bytes([0x01, 0x88, 0x23]) + TT_POLL + tt_step(13) + TT_POLL + TT_WAIT + TT_WAIT)
write_seed("fuzz_tcp_target", bytes([0x00, 0x00, 0x03]) + tt_step(4) + bytes([0x10]) + TT_POLL + tt_step(3)
           + bytes([0x04]) + TT_POLL)

# ---- fuzz_vfio_user_protocol -------------------------------------------------------------------
json = b'{"capabilities":{"max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535}}\0'
write_seed("fuzz_vfio_user_protocol", bytes([0]) + struct.pack("<HH", 0, 0) + json)
write_seed("fuzz_vfio_user_protocol", bytes([0x11]) + struct.pack("<IIQQQ", 32, 3, 0, 0x100000, 0x100000))
write_seed("fuzz_vfio_user_protocol", bytes([2]) + struct.pack("<IIQQ", 24, 2, 0, 0))
write_seed("fuzz_vfio_user_protocol", bytes([3]) + struct.pack("<IIII", 16, 0, 0, 0))
write_seed("fuzz_vfio_user_protocol", bytes([4]) + struct.pack("<IIIIQQ", 32, 0, 7, 0, 0, 0))
write_seed("fuzz_vfio_user_protocol", bytes([0x16]) + struct.pack("<IIIII", 20, 0x24, 2, 0, 1))
write_seed("fuzz_vfio_user_protocol", bytes([7]) + struct.pack("<QII", 0x14, 0, 4))
write_seed("fuzz_vfio_user_protocol", bytes([8]) + struct.pack("<QII", 0x1000, 0, 4) + struct.pack("<I", 1))
write_seed("fuzz_vfio_user_protocol", bytes([10]) + json)

# ---- fuzz_register_file -------------------------------------------------------------------------
# Input: one setup byte (ready delay, doorbell stride, NSSR support), then a program of
# BAR0 writes [0, width index (1, 2, 4, 8 bytes), offset, value], BAR0 reads [3, width index
# (1, 2, 4, 8, 3 bytes), offset], polls [5], clock advances [6, 16 us units] and resets
# [7, even: FLR / 1: NSSR "NVMe" / 3: NSSR with the value that follows].
RF_ASQ, RF_ACQ = HOST_BASE + 0x1000, HOST_BASE + 0x2000
CC_READY = 1 | (6 << 16) | (4 << 20)


def rf_write(width_index, offset, value):
    return bytes([0, width_index]) + struct.pack("<HQ", offset, value)


def rf_read(width_index, offset):
    return bytes([3, width_index]) + struct.pack("<H", offset)


def rf_clock(units):
    return bytes([6]) + struct.pack("<H", units)


def rf_bring_up(cc=CC_READY):
    out = rf_write(2, 0x14, 0) + rf_read(2, 0x1c)  # disable, wait for RDY = 0
    out += rf_write(2, 0x24, (15 << 16) | 15) + rf_write(3, 0x28, RF_ASQ) + rf_write(3, 0x30, RF_ACQ)
    return out + rf_write(2, 0x14, cc) + POLL + rf_read(2, 0x1c)


rf_up = bytes([0]) + rf_bring_up()
write_seed("fuzz_register_file", rf_up)
# The Linux driver's bring-up: CAP as two 32-bit reads, ASQ/ACQ as two 32-bit writes, a 10 ms
# ready delay waited for by polling CSTS.
write_seed("fuzz_register_file", bytes([2]) + rf_read(2, 0x00) + rf_read(2, 0x04) + rf_read(2, 0x08)
           + rf_write(2, 0x14, 0) + rf_write(2, 0x24, (31 << 16) | 31)
           + rf_write(2, 0x28, RF_ASQ) + rf_write(2, 0x2c, 0) + rf_write(2, 0x30, RF_ACQ) + rf_write(2, 0x34, 0)
           + rf_write(2, 0x14, CC_READY) + (POLL + rf_read(2, 0x1c) + rf_clock(200)) * 4 + POLL + rf_read(2, 0x1c))
# Normal shutdown, then a Controller Reset and re-enable.
write_seed("fuzz_register_file", rf_up + rf_write(2, 0x14, CC_READY | (1 << 14)) + POLL + rf_read(2, 0x1c)
           + rf_write(2, 0x14, CC_READY & ~1) + rf_read(2, 0x1c) + rf_write(2, 0x14, CC_READY) + POLL + rf_read(2, 0x1c))
# Abrupt shutdown, SHN cleared without a reset, then reset.
write_seed("fuzz_register_file", rf_up + rf_write(2, 0x14, CC_READY | (2 << 14)) + rf_read(2, 0x1c)
           + rf_write(2, 0x14, CC_READY) + POLL + rf_write(2, 0x14, 0) + rf_read(2, 0x1c))
# Shutdown while the ready delay (500 ms) still runs.
write_seed("fuzz_register_file", bytes([3]) + rf_bring_up() + rf_write(2, 0x14, CC_READY | (1 << 14)) + POLL
           + rf_clock(40000) + POLL + rf_read(2, 0x1c) + rf_write(2, 0x14, 0))
# FLR while ready, then a fresh bring-up.
write_seed("fuzz_register_file", rf_up + bytes([7, 0]) + rf_read(2, 0x1c) + rf_read(2, 0x24) + rf_bring_up())
# NSSR while ready; CSTS.NSSRO read and cleared (write 1 to clear); a wrong NSSR value.
write_seed("fuzz_register_file", rf_up + bytes([7, 1]) + rf_read(2, 0x1c) + rf_write(2, 0x1c, 1 << 4)
           + rf_read(2, 0x1c) + bytes([7, 3]) + struct.pack("<I", 0x12345678) + rf_write(2, 0x20, 0x4E564D65))
# NSSR on a controller without CAP.NSSRS.
write_seed("fuzz_register_file", bytes([0x10]) + rf_bring_up() + rf_write(2, 0x20, 0x4E564D65) + rf_read(2, 0x1c))
# Narrow, odd and wide reads of every kind of register.
narrow = b""
for offset in (0x00, 0x01, 0x02, 0x04, 0x06, 0x08, 0x0c, 0x14, 0x15, 0x1c, 0x24, 0x28, 0x2c, 0x30, 0x68, 0x18, 0x40):
    for width_index in range(5):
        narrow += rf_read(width_index, offset)
write_seed("fuzz_register_file", rf_up + narrow)
# Configurations a controller cannot run: MPS beyond MPSMAX, AQA of one entry, misaligned ASQ.
write_seed("fuzz_register_file", bytes([0]) + rf_write(2, 0x24, 0) + rf_write(3, 0x28, RF_ASQ + 8)
           + rf_write(2, 0x14, CC_READY | (8 << 7)) + POLL + rf_read(2, 0x1c) + rf_write(2, 0x14, 0)
           + rf_read(2, 0x1c) + rf_write(2, 0x14, CC_READY | (3 << 4)) + rf_read(2, 0x1c) + rf_write(2, 0x14, 0))
# INTMS/INTMC, writes to read-only and reserved registers and bits, widths the file refuses.
write_seed("fuzz_register_file", rf_up + rf_write(2, 0x0c, 5) + rf_read(2, 0x10) + rf_write(2, 0x10, 1)
           + rf_read(2, 0x0c) + rf_write(3, 0x00, 0) + rf_write(2, 0x08, 0) + rf_write(2, 0x18, 0xffffffff)
           + rf_write(2, 0x40, 1) + rf_write(2, 0xe00, 1) + rf_write(2, 0xf00, 1) + rf_write(2, 0x68, 0)
           + rf_write(2, 0x14, CC_READY | 0xe) + rf_write(2, 0x24, 0xffffffff) + rf_write(0, 0x14, 0)
           + rf_write(1, 0x14, 0) + rf_write(3, 0x10, 0) + rf_read(2, 0x14) + rf_read(2, 0x24))
# Doorbells (stride 8 bytes) and the MSI-X table and PBA at 2000h/3000h.
write_seed("fuzz_register_file", bytes([4]) + rf_bring_up() + rf_write(2, 0x1000, 1) + POLL + rf_write(2, 0x1004, 1)
           + rf_write(2, 0x1008, 1) + rf_write(2, 0x1000, 99) + rf_read(2, 0x1000) + rf_write(3, 0x1000, 1)
           + rf_write(3, 0x2000, 0xfee00000) + rf_write(2, 0x2008, 0x41) + rf_write(2, 0x200c, 0)
           + rf_read(3, 0x2000) + rf_read(2, 0x2004) + rf_read(0, 0x2001) + rf_read(3, 0x3000) + POLL)

# ---- fuzz_commands ------------------------------------------------------------------------------
# Input: one setup byte (bit 0: namespaces 1-2 on a delayed backend, bit 1: namespace 3 too), then
# SQEs [0, queue (| 80h: do not ring), bias, 64 bytes], data stores [3, offset, length - 1, bytes],
# PRP lists / SGL segments [4, offset, shape, entries], doorbells [5, queue], poll and reap [6]
# and clock advances [7, 4 us units]. Host memory: the data area starts at 200000h (64 KiB).
D = 0x200000


def cmd(queue, command, ring=True):
    return bytes([0, queue | (0 if ring else 0x80)]) + struct.pack("<H", 0) + command


def data(offset, payload):
    out = b""
    while payload:
        piece, payload = payload[:96], payload[96:]
        out += bytes([3]) + struct.pack("<H", offset) + bytes([len(piece) - 1]) + piece
        offset += len(piece)
    return out


def sgl_sqe(opcode, cid, nsid, descriptor, cdw10=0, cdw12=0):
    return struct.pack("<IIQQ", opcode | (1 << 14) | (cid << 16), nsid, 0, 0) + descriptor + struct.pack(
        "<IIIIII", cdw10, 0, cdw12, 0, 0, 0)


def data_block(address, length):
    return struct.pack("<QII", address, length, 0)


def segment(address, length, last=True):
    return struct.pack("<QII", address, length, (0x30 if last else 0x20) << 24)


REAP = bytes([6])
write_seed("fuzz_commands", bytes([0]) + cmd(0, sqe(0x06, 1, prp1=D, cdw10=1))
           + cmd(0, sqe(0x06, 2, nsid=1, prp1=D + 0x1000, cdw10=0))
           + cmd(0, sqe(0x06, 3, nsid=3, prp1=D + 0x2000, cdw10=0))
           + cmd(0, sqe(0x06, 4, prp1=D + 0x3000, cdw10=2)) + cmd(0, sqe(0x06, 5, nsid=2, prp1=D, cdw10=3))
           + REAP)
# Write then read 4 KiB of namespace 1 with PRP1, on SQ 1 and SQ 3 (both on CQ 1).
write_seed("fuzz_commands", bytes([0]) + data(0, bytes(range(256)) * 2)
           + cmd(1, sqe(0x01, 1, nsid=1, prp1=D, cdw12=7)) + REAP
           + cmd(3, sqe(0x02, 1, nsid=1, prp1=D + 0x4000, cdw12=7)) + REAP)
# 4 KiB across PRP1 (not page aligned) and PRP2, then 8 KiB over two pages, on the delayed backend.
write_seed("fuzz_commands", bytes([1]) + cmd(2, sqe(0x01, 7, nsid=1, prp1=D + 0x200, prp2=D + 0x2000, cdw10=4, cdw12=7))
           + bytes([7, 20]) + REAP + cmd(2, sqe(0x02, 8, nsid=1, prp1=D + 0x3000, prp2=D + 0x4000, cdw10=4, cdw12=15))
           + bytes([7, 50]) + REAP + bytes([7, 50]) + REAP)
# A 16 KiB read with a PRP list (stored with the list operation and as raw bytes).
write_seed("fuzz_commands", bytes([0]) + bytes([4]) + struct.pack("<H", 0x6000) + bytes([2 | 0x08])
           + struct.pack("<III", 0x1000, 0x2000, 0x3000)
           + cmd(1, sqe(0x02, 1, nsid=1, prp1=D, prp2=D + 0x6000, cdw12=31)) + REAP
           + data(0x7000, struct.pack("<QQQ", D + 0x9000, D + 0xa000, D + 0xb000))
           + cmd(1, sqe(0x01, 2, nsid=1, prp1=D + 0x8000, prp2=D + 0x7000, cdw12=31)) + REAP)
# SGLs: a Data Block in DPTR, then a Last Segment holding two Data Blocks and a Bit Bucket.
write_seed("fuzz_commands", bytes([0]) + cmd(1, sgl_sqe(0x01, 1, 1, data_block(D, 4096), cdw12=7)) + REAP
           + data(0x5000, data_block(D + 0x100, 1024) + bytes([0] * 8) + struct.pack("<II", 512, 0x10 << 24)
                  + data_block(D + 0x3000, 2560))
           + cmd(2, sgl_sqe(0x02, 2, 1, segment(D + 0x5000, 48), cdw12=7)) + REAP)
# Metadata: namespace 2 with a separate metadata pointer, namespace 3 with extended LBAs.
write_seed("fuzz_commands", bytes([0]) + data(0x8000, bytes([0xa5]) * 64)
           + cmd(1, struct.pack("<IIQQQQIIIIII", 0x01 | (1 << 16), 2, 0, D + 0x8000, D, 0, 0, 0, 7, 0, 0, 0)) + REAP
           + cmd(1, struct.pack("<IIQQQQIIIIII", 0x02 | (2 << 16), 2, 0, D + 0x8100, D + 0x1000, 0, 0, 0, 7, 0, 0, 0))
           + cmd(2, sqe(0x01, 3, nsid=3, prp1=D + 0x2000, prp2=D + 0x3000, cdw12=0))
           + cmd(2, sqe(0x02, 4, nsid=3, prp1=D + 0x4000, prp2=D + 0x5000, cdw12=0)) + REAP)
# Get Log Page: Error Information, SMART / Health, Firmware Slot, Commands Supported and Effects,
# Changed Namespace List, Telemetry Host-Initiated.
logs = b""
for cid, (lid, numd) in enumerate([(1, 15), (2, 127), (3, 127), (5, 1023), (4, 1023), (7, 127)], start=1):
    logs += cmd(0, sqe(0x02, cid, nsid=0xffffffff, prp1=D + 0x1000 * cid, cdw10=lid | (numd << 16)))
write_seed("fuzz_commands", bytes([0]) + logs + REAP)
# Set and Get Features: Arbitration, Power Management, Temperature Threshold, Volatile Write Cache,
# Number of Queues (again), Interrupt Coalescing, Async Event Configuration, Timestamp, Keep Alive.
features = data(0, struct.pack("<Q", 1234567))
for cid, (fid, value) in enumerate([(1, 3), (2, 0), (4, 350), (6, 1), (7, 0x30003), (8, 0x0a04), (0x0b, 0x10f),
                                    (0x0f, 0)], start=1):
    features += cmd(0, sqe(0x09, cid, cdw10=fid, cdw11=value))
features += cmd(0, sqe(0x09, 9, prp1=D, cdw10=0x0e)) + REAP
for cid, fid in enumerate([1, 2, 4, 6, 7, 8, 0x0b, 0x0e, 0x0f], start=10):
    features += cmd(0, sqe(0x0a, cid, prp1=D + 0x1000, cdw10=fid | (3 << 8 if fid == 4 else 0)))
write_seed("fuzz_commands", bytes([0]) + features + REAP)
# Asynchronous events, Keep Alive, Abort of a queued command, namespace detach and attach.
write_seed("fuzz_commands", bytes([1]) + cmd(0, sqe(0x0c, 1)) + cmd(0, sqe(0x0c, 2)) + cmd(0, sqe(0x18, 3))
           + cmd(1, sqe(0x02, 9, nsid=1, prp1=D, cdw12=7)) + cmd(0, sqe(0x08, 4, cdw10=1 | (9 << 16)))
           + data(0x2000, struct.pack("<HH", 1, 1)) + cmd(0, sqe(0x15, 5, nsid=2, prp1=D + 0x2000, cdw10=1))
           + REAP + cmd(0, sqe(0x15, 6, nsid=2, prp1=D + 0x2000, cdw10=0)) + REAP + bytes([7, 100]) + REAP)
# Dataset Management, Write Zeroes, Compare, Verify, Copy, Flush, Write Uncorrectable.
write_seed("fuzz_commands", bytes([0]) + data(0, struct.pack("<IIQ", 0, 8, 16)) + data(0x1000, struct.pack("<QQHHI", 0, 0, 3, 0, 0)
           + bytes(16))
           + cmd(1, sqe(0x09, 1, nsid=1, prp1=D, cdw11=4)) + cmd(1, sqe(0x08, 2, nsid=1, cdw10=8, cdw12=7))
           + cmd(1, sqe(0x05, 3, nsid=1, prp1=D + 0x2000, cdw12=0)) + cmd(2, sqe(0x0c, 4, nsid=1, cdw12=15))
           + cmd(2, sqe(0x19, 5, nsid=1, prp1=D + 0x1000, cdw10=64, cdw12=0)) + cmd(2, sqe(0x00, 6, nsid=0xffffffff))
           + cmd(1, sqe(0x04, 7, nsid=1, cdw10=100, cdw12=1)) + cmd(1, sqe(0x02, 8, nsid=1, prp1=D, cdw10=100)) + REAP)
# Delayed backends everywhere, with more commands than CQ 1 holds: completions wait for the host.
burst = b""
for i in range(12):
    burst += cmd(1 if i % 2 else 3, sqe(0x01 if i < 6 else 0x02, i, nsid=1 + i % 3, prp1=D + 0x1000 * i,
                                        mptr=D + 0xf000 + 64 * i, cdw10=i, cdw12=0), ring=i % 4 == 3)
write_seed("fuzz_commands", bytes([3]) + burst + bytes([5, 1, 5, 3]) + POLL + bytes([7, 30]) + POLL
           + bytes([7, 30]) + REAP + bytes([7, 30]) + REAP + REAP)
# Queue management on identifiers the host does not use, and doorbells the controller ignores.
write_seed("fuzz_commands", bytes([0]) + cmd(0, sqe(0x05, 1, cdw10=(7 << 16) | 3, cdw11=1))
           + cmd(0, sqe(0x01, 2, cdw10=(7 << 16) | 4, cdw11=1 | (3 << 16))) + REAP
           + cmd(0, sqe(0x04, 3, cdw10=3)) + cmd(0, sqe(0x00, 4, cdw10=4)) + cmd(0, sqe(0x04, 5, cdw10=3))
           + cmd(0, sqe(0x05, 6, cdw10=(7 << 16) | 3, cdw11=0)) + bytes([5, 0x81, 200, 5, 0xc2, 7]) + REAP)
# Format NVM namespace 3 to 512-byte blocks, then a read of it.
write_seed("fuzz_commands", bytes([2]) + cmd(0, sqe(0x80, 1, nsid=3, cdw10=0)) + bytes([7, 50]) + REAP
           + cmd(1, sqe(0x02, 1, nsid=3, prp1=D, cdw12=7)) + bytes([7, 50]) + REAP)

# fuzz_rpc_requests: a read size, then a management client's byte stream.


def rpc_requests(*calls, pretty=False):
    import json
    out = ""
    for index, (method, params) in enumerate(calls, start=1):
        request = {"jsonrpc": "2.0", "method": method, "id": index}
        if params is not None:
            request["params"] = params
        out += json.dumps(request, indent=2 if pretty else None) + "\n"
    return out.encode()


NQN = "nqn.2016-06.io.spdk:cnode1"
# A target built as rpc.py builds one, then taken apart.
write_seed("fuzz_rpc_requests", bytes([7]) + rpc_requests(
    ("bdev_malloc_create", {"name": "Malloc0", "num_blocks": 64, "block_size": 512}),
    ("bdev_null_create", {"name": "Null0", "num_blocks": 16, "block_size": 4096,
                          "uuid": "2b6601ba-eada-44fb-9a83-a20eb9eb9e90"}),
    ("nvmf_create_transport", {"trtype": "VFIOUSER", "max_queue_depth": 64}),
    ("nvmf_create_transport", {"trtype": "tcp", "in_capsule_data_size": 8192}),
    ("nvmf_create_subsystem", {"nqn": NQN, "allow_any_host": True, "serial_number": "SPDK01",
                               "ana_reporting": False}),
    ("nvmf_subsystem_add_host", {"nqn": NQN, "host": "nqn.2016-06.io.spdk:host1"}),
    ("nvmf_subsystem_add_ns", {"nqn": NQN, "namespace": {"bdev_name": "Malloc0", "nsid": 3,
                                                         "eui64": "0011223344556677"}}),
    ("nvmf_subsystem_add_ns", {"nqn": NQN, "namespace": {"bdev_name": "Null0",
                                                         "nguid": "00112233445566778899AABBCCDDEEFF"}}),
    ("nvmf_subsystem_add_listener", {"nqn": NQN, "listen_address": {"trtype": "VFIOUSER", "traddr": "/tmp"}}),
    ("nvmf_subsystem_add_listener", {"nqn": NQN, "listen_address": {"trtype": "TCP", "adrfam": "IPv4",
                                                                    "traddr": "127.0.0.1", "trsvcid": "4420"}}),
    ("nvmf_discovery_add_referral", {"address": {"trtype": "tcp", "traddr": "192.0.2.9", "trsvcid": "8009"},
                                     "secure_channel": True}),
    ("nvmf_discovery_get_referrals", None),
    ("bdev_malloc_delete", {"name": "Malloc0"}),
    ("nvmf_get_subsystems", None),
    ("nvmf_get_transports", {"trtype": "TCP"}),
    ("framework_get_config", {"name": "nvmf"}),
    ("nvmf_subsystem_remove_ns", {"nqn": NQN, "nsid": 3}),
    ("nvmf_subsystem_remove_listener", {"nqn": NQN, "listen_address": {"trtype": "TCP",
                                                                       "traddr": "127.0.0.1", "trsvcid": "4420"}}),
    ("nvmf_subsystem_remove_host", {"nqn": NQN, "host": "nqn.2016-06.io.spdk:host1"}),
    ("nvmf_subsystem_allow_any_host", {"nqn": NQN, "allow_any_host": False}),
    ("nvmf_discovery_remove_referral", {"address": {"trtype": "TCP", "traddr": "192.0.2.9", "trsvcid": "8009"}}),
    ("nvmf_delete_subsystem", {"nqn": NQN}),
    ("bdev_malloc_delete", {"name": "Malloc0"}),
    ("bdev_get_bdevs", None),
    ("bdev_get_iostat", {"reset_mode": "all"}),
    ("rpc_get_methods", {"current": True}),
    ("spdk_get_version", None),
    ("framework_get_subsystems", None)))
# Pretty-printed as rpc.py sends requests, with refusals, and a notification.
write_seed("fuzz_rpc_requests", bytes([0]) + rpc_requests(
    ("nvmf_create_subsystem", {"nqn": NQN, "max_cntlid": 70000}),
    ("nvmf_create_subsystem", {"nqn": NQN}),
    ("nvmf_create_subsystem", {"nqn": NQN}),
    ("nvmf_subsystem_add_ns", {"nqn": NQN, "namespace": "Malloc0"}),
    ("nvmf_create_transport", {"trtype": "RDMA"}),
    ("nvmf_subsystem_add_listener", {"nqn": NQN, "listen_address": {"trtype": "VFIOUSER", "traddr": "/tmp"}}),
    ("no_such_method", [1, 2]), pretty=True)
           + b'{"jsonrpc": "2.0", "method": "nvmf_get_subsystems"}' + b"[]")
# A stream that breaks off in garbage.
write_seed("fuzz_rpc_requests", bytes([63]) + rpc_requests(("bdev_get_bdevs", {"name": "x"}))
           + b'{"jsonrpc": "2.0", "id": 9, "method": "bdev_get_bdevs"} }garbage')
# Numbers nlohmann-json cannot hold (it throws out_of_range for them), in the id and in params.
write_seed("fuzz_rpc_requests", bytes([5]) + (
    b'{"jsonrpc":"2.0","method":"spdk_get_version","id":1e400}\n'
    b'{"jsonrpc":"2.0","method":"bdev_malloc_create","id":2,"params":{"name":"M0","num_blocks":'
    + b"9" * 400 + b',"block_size":512}}\n'
    b'{"jsonrpc":"2.0","method":"bdev_malloc_create","id":3,"params":{"name":"M1",'
    b'"num_blocks":18446744073709551616,"block_size":512}}\n'
    b'{"jsonrpc":"2.0","method":"bdev_malloc_create","id":4,"params":{"name":"M2","num_blocks":-1,"block_size":-0.0}}\n'
    b'{"jsonrpc":"2.0","method":"bdev_null_create","id":-1e-400,"params":{"name":"N0",'
    b'"num_blocks":1.7976931348623157e308,"block_size":4096}}\n'
    b'{"jsonrpc":"2.0","method":"nvmf_create_subsystem","id":' + b"1" * 30
    + b',"params":{"nqn":"nqn.2016-06.io.spdk:cnode1","max_namespaces":4294967296}}\n'))
# Nesting just under and beyond the limit.
write_seed("fuzz_rpc_requests", bytes([63]) + (
    b'{"jsonrpc":"2.0","method":"spdk_get_version","id":1,"params":' + b"[" * 30 + b"]" * 30 + b"}\n"
    + b'{"jsonrpc":"2.0","method":"spdk_get_version","id":2,"params":' + b'{"a":' * 40 + b"1" + b"}" * 40
    + b"}\n"))
# A string of most of a request's budget, and an NQN over its length.
write_seed("fuzz_rpc_requests", bytes([31]) + (
    b'{"jsonrpc":"2.0","method":"bdev_malloc_create","id":1,"params":{"name":"' + b"x" * 60000
    + b'","num_blocks":8,"block_size":512}}\n'
    b'{"jsonrpc":"2.0","method":"nvmf_create_subsystem","id":2,"params":{"nqn":"nqn.2016-06.io.spdk:'
    + b"y" * 300 + b'"}}\n'))
# Invalid UTF-8, raw and as a lone surrogate escape.
write_seed("fuzz_rpc_requests", bytes([7]) + (
    b'{"jsonrpc":"2.0","method":"bdev_malloc_create","id":1,"params":{"name":"\xff\xfe",'
    b'"num_blocks":8,"block_size":512}}\n'
    b'{"jsonrpc":"2.0","method":"bdev_null_create","id":2,"params":{"name":"\\ud800",'
    b'"num_blocks":8,"block_size":512}}\n'
    b'{"jsonrpc":"2.0","method":"nvmf_create_subsystem","id":3,"params":{"nqn":"nqn.2016-06.io.spdk:\xc0\xaf"}}\n'))
# Members of the wrong types, a batch, a notification, a null method.
write_seed("fuzz_rpc_requests", bytes([12]) + (
    b'{"jsonrpc":"2.0","method":"nvmf_create_subsystem","id":1,"params":{"nqn":["nqn.x"],"allow_any_host":"yes"}}\n'
    b'[{"jsonrpc":"2.0","method":"spdk_get_version","id":1}]\n'
    b'{"jsonrpc":"2.0","method":"bdev_get_bdevs"}\n'
    b'{"jsonrpc":"2.0","method":null,"id":{}}\n'
    b'{"jsonrpc":2.0,"method":"spdk_get_version","id":true}\n'))
