#!/usr/bin/env python3
"""Writes the starting seeds of fuzz/corpus/ (committed; rerun only to regenerate them):
  fuzz_safetensors/  valid safetensors files, one per dtype and with the names, dtypes and shapes of
                     fuzz_safetensors' load_into targets, plus a few malformed ones
  fuzz_ops/, fuzz_graph/  byte strings from a fixed PRNG (the harnesses decode any bytes into calls)
Inputs found by fuzzing that add coverage are merged into the same folders by hand
(scripts/run-fuzz.sh never writes there)."""
import json
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "F16": 2, "BF16": 2, "F32": 4, "F64": 8}


def safetensors(tensors, metadata=None, pad=0):
    """tensors: list of (name, dtype, shape, raw bytes or None for a pattern)."""
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        n = 1
        for d in shape:
            n *= d
        size = n * SIZES[dtype]
        if raw is None:
            raw = bytes((i * 37 + 11) % 256 for i in range(size))
            if dtype == "BOOL":
                raw = bytes(b & 1 for b in raw)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode() + b" " * pad
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def with_header(file, edit):
    """The file with its JSON header text edited by edit(bytes) and the size prefix recomputed."""
    (n,) = struct.unpack("<Q", file[:8])
    text = edit(file[8:8 + n])
    return struct.pack("<Q", len(text)) + text + file[8 + n:]


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main():
    st = os.path.join(HERE, "corpus", "fuzz_safetensors")
    targets = [("a", "F32", [2, 3]), ("b", "F64", [3, 2]), ("c", "I64", [4]), ("d", "BF16", [2, 2]),
               ("e", "U8", []), ("f", "F16", [0, 3]), ("g", "BOOL", [3]), ("h", "I16", [2]),
               ("i", "F32", [2, 3]), ("x", "I8", [2, 2]), ("y", "I32", [1])]
    for name, dtype, shape in targets:
        write(st, f"target-{name}-{dtype.lower()}", safetensors([(name, dtype, shape, None)]))
    write(st, "targets-all", safetensors([(n, d, s, None) for n, d, s in targets]))
    write(st, "all-dtypes", safetensors([(f"t{d.lower()}", d, [2, 1], None) for d in SIZES]))
    write(st, "metadata-padded", safetensors([("a", "F32", [2, 3], None)], {"format": "pt"}, pad=5))
    write(st, "empty-header", safetensors([]))
    write(st, "unsupported-dtype",
          with_header(safetensors([("a", "U8", [1], None)]), lambda t: t.replace(b'"U8"', b'"F8_E4M3"')))
    write(st, "unknown-dtype", with_header(safetensors([("z", "F32", [1], None)]), lambda t: t.replace(b'"F32"', b'"C64"')))
    good = safetensors([("a", "F32", [2, 3], None), ("c", "I64", [4], None)])
    write(st, "truncated", good[:-3])
    overlap = safetensors([("a", "F32", [2], None), ("c", "F32", [2], None)]).replace(b"[8,16]", b"[4,12]")
    write(st, "overlapping", overlap)
    write(st, "duplicate-name", with_header(safetensors([("a", "F32", [1], None)]),
                                            lambda t: t[:-1] + b',"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'))

    rng = random.Random(0x5eed)
    for harness, count in (("fuzz_ops", 24), ("fuzz_graph", 24)):
        folder = os.path.join(HERE, "corpus", harness)
        for i in range(count):
            size = rng.choice([16, 48, 96, 200, 400])
            write(folder, f"seed-{i:02d}", bytes(rng.randrange(256) for _ in range(size)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
