#!/usr/bin/env python3
"""Runs bench/cpu_train_step (oneflow_c, eager) and bench/pytorch_train_step.py (PyTorch) one after the
other at the same thread count and prints, per model, both medians and the speed ratio
PyTorch time / oneflow_c time (above 1: oneflow_c is faster). Targets (issue 3): >= 1 on resnet50 and
resnet18, >= 3 on the MLP.

    /usr/bin/python3 bench/compare_cpu.py --binary build/release/bench/cpu_train_step [--threads N] [--model M]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LINE = re.compile(r"model=(\S+) batch=(\d+) threads=(\d+) median_ms=([\d.]+) min_ms=([\d.]+)")
TARGETS = {"mlp": 3.0, "resnet18": 1.0, "resnet50": 1.0}


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {m.group(1): (int(m.group(2)), float(m.group(4)), float(m.group(5))) for m in LINE.finditer(out)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--model", default="all")
    a = p.parse_args()
    common = ["--model", a.model, "--threads", str(a.threads)]
    ours = run([a.binary] + common)
    torch = run(["/usr/bin/python3", os.path.join(HERE, "pytorch_train_step.py")] + common)
    print(f"CPU training step, {a.threads} threads (median ms; ratio = PyTorch / oneflow_c, higher is better)")
    print(f"{'model':10} {'batch':>5} {'oneflow_c':>10} {'PyTorch':>10} {'ratio':>7} {'target':>7}")
    ok = True
    for name in ("mlp", "resnet18", "resnet50"):
        if name not in ours or name not in torch:
            continue
        ratio = torch[name][1] / ours[name][1]
        met = ratio >= TARGETS[name]
        ok &= met
        print(f"{name:10} {ours[name][0]:5d} {ours[name][1]:10.3f} {torch[name][1]:10.3f} {ratio:7.2f} "
              f"{'>=' + str(TARGETS[name]):>7} {'' if met else '(below target)'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
