#!/usr/bin/env python3
"""Data-parallel training against PyTorch's DistributedDataParallel: the Fashion-MNIST example
(examples/fashion_mnist/train_fashion_mnist.c, a data-parallel graph over a Gloo process group) and its
PyTorch twin (bench/fashion_mnist_pytorch.py, DDP over the gloo backend), the same network, global batch,
data and share per rank, each in 1 process and in N processes of --threads threads (default: 2 processes
of 1 thread, both started by scripts/run-distributed.sh), one run after the other. Prints the training
steps/s of every run (global steps over the slowest rank's training time), images/s in total, the ratio
oneflow_c steps/s / PyTorch steps/s (target >= 1 at N processes: at least as fast as DDP), and the scaling
from 1 to N processes of each. PyTorch runs in the better of NCHW and channels_last (as measured in one
process). Exits 1 when the ratio misses the target.

    /usr/bin/python3 bench/compare_ddp.py [--build-dir build/release] [--processes N] [--threads N]
        [--limit IMAGES] [--epochs N]
"""
import argparse
import os
import re
import sys

import benchlib

TARGET = 1.0  # oneflow_c steps/s / DDP steps/s at N processes
LAUNCHER = os.path.join(benchlib.REPO, "scripts", "run-distributed.sh")


def summarize(text, batch_size, processes):
    """Steps/s and images/s of one run from its ranks' "bench: epoch=..." lines (the launcher prefixes
    them with "[rank r] "): the slowest rank's training time counts, the images are all ranks'."""
    per_rank = {}
    for line in text.splitlines():
        m = re.match(r"(?:\[rank (\d+)\] )?(bench: .*)$", line)
        if m:
            per_rank.setdefault(int(m.group(1) or 0), []).append(m.group(2))
    if len(per_rank) != processes:
        raise RuntimeError(f"expected 'bench:' lines from {processes} rank(s), got {sorted(per_rank)}:\n" + text[-2000:])
    train_s, images = 0.0, 0.0
    for lines in per_rank.values():
        epochs = benchlib.records("\n".join(lines), "epoch", prefix="bench: ")
        train_s = max(train_s, sum(e["train_s"] for e in epochs))
        images += sum(e["images_per_s"] * e["train_s"] for e in epochs)
    accuracy = benchlib.records("\n".join(per_rank[0]), "epoch", prefix="bench: ")[-1]["accuracy"]
    steps = images / (batch_size // processes * processes)  # a step trains on every rank's share
    return {"steps_per_s": steps / train_s, "images_per_s": images / train_s, "train_s": train_s,
            "accuracy": accuracy}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=os.path.join(benchlib.REPO, "build", "release"))
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="per process")
    p.add_argument("--limit", type=int, default=16000, help="training images per epoch (a multiple of the batch)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    a = p.parse_args()
    example = os.path.join(a.build_dir, "examples", "train_fashion_mnist")
    twin = ["/usr/bin/python3", os.path.join(benchlib.HERE, "fashion_mnist_pytorch.py")]
    common = ["--summary", "--epochs", str(a.epochs), "--threads", str(a.threads), "--limit", str(a.limit),
              "--batch-size", str(a.batch_size)]
    twin_common = [w for w in common if w != "--summary"]

    def launch(cmd, n):
        return [LAUNCHER, str(n), "--"] + cmd if n > 1 else cmd

    runs = {}
    for n in (1, a.processes):
        out = ["--out", os.devnull]
        text = benchlib.run(launch([example, "--graph"] + out + common, n), a.threads, echo=True)
        runs[("oneflow_c", n)] = summarize(text, a.batch_size, n)
    formats = {"NCHW": [], "channels_last": ["--channels-last"]}
    one = {f: summarize(benchlib.run(twin + flags + twin_common, a.threads, echo=True), a.batch_size, 1)
           for f, flags in formats.items()}
    best = max(one, key=lambda f: one[f]["steps_per_s"])
    runs[("PyTorch", 1)] = one[best]
    text = benchlib.run(launch(twin + formats[best] + twin_common, a.processes), a.threads, echo=True)
    runs[("PyTorch", a.processes)] = summarize(text, a.batch_size, a.processes)

    print(f"\nData-parallel Fashion-MNIST training: global batch {a.batch_size}, {a.limit} images x {a.epochs} "
          f"epoch(s), {a.threads} thread(s) per process; PyTorch DDP (gloo) in {best}")
    print(f"{'run':26} {'steps/s':>8} {'images/s':>9} {'train s':>8} {'accuracy':>8}")
    for (who, n), r in runs.items():
        print(f"{who + f' x {n} process' + ('es' if n > 1 else ''):26} {r['steps_per_s']:8.2f} "
              f"{r['images_per_s']:9.0f} {r['train_s']:8.2f} {100 * r['accuracy']:7.2f}%")
    print(f"\nscaling 1 -> {a.processes} processes (steps/s): oneflow_c "
          f"{runs[('oneflow_c', a.processes)]['steps_per_s'] / runs[('oneflow_c', 1)]['steps_per_s']:.2f}x, PyTorch "
          f"{runs[('PyTorch', a.processes)]['steps_per_s'] / runs[('PyTorch', 1)]['steps_per_s']:.2f}x")
    targets = benchlib.Targets()
    for n in (1, a.processes):
        ratio = runs[("oneflow_c", n)]["steps_per_s"] / runs[("PyTorch", n)]["steps_per_s"]
        print(f"oneflow_c / PyTorch steps/s at {n} process(es): {ratio:.2f}")
        if n > 1:
            targets.at_least(f"oneflow_c / DDP steps/s at {n} processes", ratio, TARGET)
    return targets.report()


if __name__ == "__main__":
    sys.exit(main())
