#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (corpus/wire, corpus/frames):
one valid example of every message each decoder parses, in the layouts of
src/bootstrap/wire.cc, src/algo/plan.cc and transports/. Re-run after a wire
format changes."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SECRET = bytes(range(16))


def hello(kind, nranks, frm, to, transport):
    return struct.pack("<IHH16siiiI", 0x41525453, 3, kind, SECRET, nranks, frm, to, transport)


def opdesc(coll, dtype, op, root, count, seq, fused=0, layout=0):
    return struct.pack("<BBBBBBHiIQQ", 0x5D, 0xE5, coll, dtype, op, 0, fused, root, layout, count, seq)


def frame(kind, payload):
    return struct.pack("<II", kind, len(payload)) + payload


def abort_payload(code, text):
    return struct.pack("<I", code) + text.encode()


def arrived_payload(seq, coll):
    return struct.pack("<QB7x", seq, coll)


wire = {
    "hello_bootstrap": b"\x00" + hello(1, 4, 2, -1, 0),
    "hello_data": b"\x00" + hello(2, 8, 3, 5, 3),
    "unique_id": b"\x01" + struct.pack("<I", 0x41525453) + bytes(124),
    "rank_info": b"\x02" + struct.pack("<4sHHQii", bytes([198, 18, 0, 1]), 4242, 4243, 0x1234, 77, 0),
    "opdesc_allreduce": b"\x03" + opdesc(1, 8, 0, 0, 1024, 7),
    "opdesc_fused": b"\x03" + opdesc(1, 6, 4, 0, 99991, 12, fused=300, layout=0xDEADBEEF),
    "abort": b"\x04" + abort_payload(5, "rank 1 closed its connection"),
    "arrived": b"\x04" + arrived_payload(42, 1),
    "tcp_blob": b"\x05" + struct.pack("<HH4xQ", 40000, 1, 0x0123456789ABCDEF),
    "tagged_blob": b"\x05" + struct.pack("<IIII", 0x5354544E, 262144, 16, 8) + bytes(range(8)),
    # selector 0x16: topology JSON for 1 + (0x16 >> 4) = 2 ranks
    "topology": b"\x16" + b'{"ranks": [{"node": 0, "numa": 0}, {"node": 1}], "links": {"intra": '
                           b'{"alpha_us": 1.0, "gbps": 20}, "inter": {"alpha_us": 10, "gbps": 2.5}, "memory_gbps": 20}}',
}
frames = {
    "tcp_data": b"\x00" + frame(1, b"x" * 64) + frame(3, arrived_payload(9, 1)) + frame(1, b"y" * 16),
    "tcp_abort": b"\x00" + frame(1, b"z" * 8) + frame(2, abort_payload(6, "rank 2 timed out")),
    "liveness_arrived_abort": b"\x01" + frame(3, arrived_payload(3, 2)) + frame(2, abort_payload(5, "bye")),
}
for sub, items in (("wire", wire), ("frames", frames)):
    os.makedirs(os.path.join(HERE, "corpus", sub), exist_ok=True)
    for name, data in items.items():
        with open(os.path.join(HERE, "corpus", sub, name), "wb") as f:
            f.write(data)
