#!/usr/bin/env python3
"""Trains the character-level transformer of examples/char_lm side by side with its PyTorch twin
(bench/char_lm_pytorch.py) from the same initial weights, on the same windows, for the same number of
steps, one after the other at the same thread count, and prints:

    the loss of both every --log-every steps and the largest difference;
    tokens/s of both (training steps after the first; oneflow_c: one lazy-graph run per step) and the
    ratio oneflow_c / PyTorch (above 1: oneflow_c is faster; the target is >= 1).

Exits 1 when the target is missed or the losses part by more than --loss-tolerance.

    /usr/bin/python3 bench/compare_char_lm.py --binary build/release/examples/train_char_lm [--steps 200] [--threads N]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STEP = re.compile(r"^step (\d+) loss ([\d.]+)$", re.M)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--loss-tolerance", type=float, default=0.05)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "init.safetensors")
        ours = subprocess.run([a.binary, "--steps", str(a.steps), "--log-every", str(a.log_every), "--threads",
                               str(a.threads), "--save-init", init, "--sample", "0",
                               "--out", os.path.join(tmp, "final.safetensors")],
                              check=True, capture_output=True, text=True).stdout
        theirs = subprocess.run([sys.executable, os.path.join(HERE, "char_lm_pytorch.py"), "--init", init, "--steps",
                                 str(a.steps), "--log-every", str(a.log_every), "--threads", str(a.threads)],
                                check=True, capture_output=True, text=True).stdout
    our_loss = {int(s): float(v) for s, v in STEP.findall(ours)}
    their_loss = {int(s): float(v) for s, v in STEP.findall(theirs)}
    our_rate = float(re.search(r"training: .*?, (\d+) tokens/s after the first step", ours).group(1))
    their_rate = float(re.search(r"(\d+) tokens/s", theirs.splitlines()[-1]).group(1))
    print(f"char-level transformer (examples/char_lm defaults), {a.steps} steps, {a.threads} threads")
    print(f"{'step':>6} {'oneflow_c':>10} {'PyTorch':>10} {'diff':>8}")
    worst = 0.0
    for step in sorted(our_loss):
        if step in their_loss:
            diff = abs(our_loss[step] - their_loss[step])
            worst = max(worst, diff)
            print(f"{step:>6} {our_loss[step]:>10.4f} {their_loss[step]:>10.4f} {diff:>8.4f}")
    ratio = our_rate / their_rate
    print(f"largest loss difference {worst:.4f} (tolerance {a.loss_tolerance})")
    print(f"tokens/s: oneflow_c (lazy graph) {our_rate:.0f}, PyTorch {their_rate:.0f}, ratio {ratio:.2f} (target >= 1)")
    return 0 if ratio >= 1.0 and worst <= a.loss_tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
