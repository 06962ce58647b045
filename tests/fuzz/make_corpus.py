#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: real bring-up sequences and real commands,
encoded in each target's input format (see the targets' sources)."""
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))
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


def sqe(opcode, cid, nsid=0, prp1=0, prp2=0, cdw10=0, cdw11=0, cdw12=0, psdt=0):
    cdw0 = opcode | (psdt << 14) | (cid << 16)
    return struct.pack("<IIQQQQIIIIII", cdw0, nsid, 0, 0, prp1, prp2, cdw10, cdw11, cdw12, 0, 0, 0)


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
    directory = os.path.join(here, "corpus", name)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "seed-" + str(len(os.listdir(directory))).zfill(2)), "wb") as f:
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
