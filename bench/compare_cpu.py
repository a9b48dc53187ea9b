#!/usr/bin/env python3
"""Runs bench/cpu_train_step (oneflow_c, eager and lazy-graph steps, alternating) and
bench/pytorch_train_step.py (PyTorch) one after the other at the same thread count and prints, per model,
the three medians and the ratios:

    lazy/eager    = oneflow_c lazy time / oneflow_c eager time   (at most 1: the graph is at least as fast)
    PyTorch/eager = PyTorch time / oneflow_c eager time          (above 1: oneflow_c is faster)
    PyTorch/lazy  = PyTorch time / oneflow_c lazy time           (above 1: oneflow_c is faster)

Targets (issue 3): PyTorch/oneflow_c >= 1 on resnet50 and resnet18, >= 3 on the MLP, checked for each
oneflow_c mode; and lazy/eager <= 1. Exits 1 when one is missed.

    /usr/bin/python3 bench/compare_cpu.py --binary build/release/bench/cpu_train_step [--threads N] [--model M]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# pytorch_train_step.py prints no mode: its lines count as "eager".
LINE = re.compile(r"model=(\S+) (?:mode=(\S+) )?batch=(\d+) threads=(\d+) median_ms=([\d.]+) min_ms=([\d.]+)")
TARGETS = {"mlp": 3.0, "resnet18": 1.0, "resnet50": 1.0}


def run(cmd):
    """{(model, mode): (batch, median_ms, min_ms)} from the lines a benchmark prints."""
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {(m.group(1), m.group(2) or "eager"): (int(m.group(3)), float(m.group(5)), float(m.group(6)))
            for m in LINE.finditer(out)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--model", default="all")
    a = p.parse_args()
    common = ["--model", a.model, "--threads", str(a.threads)]
    ours = run([a.binary, "--mode", "both"] + common)
    torch = run(["/usr/bin/python3", os.path.join(HERE, "pytorch_train_step.py")] + common)
    print(f"CPU training step, {a.threads} threads (median ms). lazy/eager = lazy ms / eager ms (<= 1: the graph "
          f"is at least as fast); PyTorch/x = PyTorch ms / x ms (higher is better)")
    print(f"{'model':10} {'batch':>5} {'eager':>10} {'lazy':>10} {'PyTorch':>10} {'lazy/eager':>10} "
          f"{'PyTorch/eager':>13} {'PyTorch/lazy':>12} {'target':>7}")
    ok = True
    for name in ("mlp", "resnet18", "resnet50"):
        if (name, "eager") not in ours or (name, "lazy") not in ours or (name, "eager") not in torch:
            continue
        batch, eager, lazy, pt = ours[(name, "eager")][0], ours[(name, "eager")][1], ours[(name, "lazy")][1], \
            torch[(name, "eager")][1]
        lazy_eager, pt_eager, pt_lazy = lazy / eager, pt / eager, pt / lazy
        misses = []
        if pt_eager < TARGETS[name]:
            misses.append("eager below target")
        if pt_lazy < TARGETS[name]:
            misses.append("lazy below target")
        if lazy_eager > 1.0:
            misses.append("lazy slower than eager")
        ok &= not misses
        print(f"{name:10} {batch:5d} {eager:10.3f} {lazy:10.3f} {pt:10.3f} {lazy_eager:10.2f} {pt_eager:13.2f} "
              f"{pt_lazy:12.2f} {'>=' + str(TARGETS[name]):>7} {'(' + ', '.join(misses) + ')' if misses else ''}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
