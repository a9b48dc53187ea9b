#!/usr/bin/env python3
"""Generates one binding's op methods from oneflow_c.h (the bindings' one op generator).

Usage: gen_ops.py LANG HEADER OUTPUT
  LANG is rust, go or java; the emitter is emit_<LANG>.py next to this file, a module with
  emit(header) -> {relative path: text} (one file or several, written under OUTPUT, a directory) and
  the model is oneflow_header.parse(HEADER). Files are only rewritten when their text changes, so
  that a build does not recompile what did not change.
"""
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oneflow_header  # noqa: E402


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    lang, header_path, out_dir = sys.argv[1:]
    emitter = importlib.import_module(f"emit_{lang}")
    files = emitter.emit(oneflow_header.parse(header_path))
    for rel, text in files.items():
        path = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        if os.path.exists(path) and open(path, encoding="utf-8").read() == text:
            continue
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
