#!/usr/bin/env python3
"""The main job against PyTorch: runs, at the same thread count and one after the other, the Fashion-MNIST
example (examples/fashion_mnist/train_fashion_mnist.c) eagerly and with --graph, and its PyTorch twin
(bench/fashion_mnist_pytorch.py: same network, initialisation scheme, optimizer, schedule, data, batches
and evaluation) in NCHW and in channels_last, each for --epochs (default 1), and prints for each: training
images/s, training time, evaluation time (the 10000 test images in batches of 256), final test accuracy;
then the ratios PyTorch time / oneflow_c time for training and for evaluation, PyTorch taking the better of
its two formats for each (above 1: oneflow_c is faster; target >= 1.5 for eager and for graph), and the
accuracies side by side. Exits 1 when a ratio misses its target, or, with --accuracy-tolerance, when an
accuracy parts from PyTorch's best by more than that many points. The two sides start from different
random weights (same scheme), so their accuracies agree only to within a point or so after a full epoch;
with --limit they mean little.

    /usr/bin/python3 bench/compare_fashion_mnist.py [--build-dir build/release] [--threads N] [--epochs N]
        [--limit N] [--width N] [--batch-size N] [--accuracy-tolerance POINTS]
"""
import argparse
import os
import sys
import tempfile

import benchlib

TARGET = 1.5  # PyTorch time / oneflow_c time, training and evaluation, eager and graph


def summarize(text):
    """Totals over the epochs of the "bench: epoch=..." lines: images/s, train s, eval s, final accuracy."""
    epochs = benchlib.records(text, "epoch", prefix="bench: ")
    if not epochs:
        raise RuntimeError("no 'bench: epoch=...' line in the output:\n" + text[-2000:])
    train_s = sum(e["train_s"] for e in epochs)
    images = sum(e["images_per_s"] * e["train_s"] for e in epochs)
    return {"images_per_s": images / train_s, "train_s": train_s, "eval_s": sum(e["eval_s"] for e in epochs),
            "accuracy": epochs[-1]["accuracy"], "loss": epochs[-1]["loss"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=os.path.join(benchlib.REPO, "build", "release"))
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--limit", type=int, default=0, help="only the first N training images (quick checks)")
    p.add_argument("--width", type=int, default=0, help="default: the example's")
    p.add_argument("--batch-size", type=int, default=0, help="default: the example's")
    p.add_argument("--accuracy-tolerance", type=float, default=None, help="percentage points; default: not checked")
    a = p.parse_args()
    common = ["--epochs", str(a.epochs), "--threads", str(a.threads)]
    for flag, value in (("--limit", a.limit), ("--width", a.width), ("--batch-size", a.batch_size)):
        if value > 0:
            common += [flag, str(value)]
    example = os.path.join(a.build_dir, "examples", "train_fashion_mnist")
    twin = [sys.executable, os.path.join(benchlib.HERE, "fashion_mnist_pytorch.py")]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = ["--summary", "--out", os.path.join(tmp, "weights.safetensors")]
        runs["oneflow_c eager"] = summarize(benchlib.run([example] + out + common, a.threads, echo=True))
        runs["oneflow_c graph"] = summarize(benchlib.run([example, "--graph"] + out + common, a.threads, echo=True))
    runs["PyTorch NCHW"] = summarize(benchlib.run(twin + common, a.threads, echo=True))
    runs["PyTorch channels_last"] = summarize(benchlib.run(twin + ["--channels-last"] + common, a.threads, echo=True))

    torch = {k: v for k, v in runs.items() if k.startswith("PyTorch")}
    best_train = min(torch, key=lambda k: torch[k]["train_s"])
    best_eval = min(torch, key=lambda k: torch[k]["eval_s"])
    print(f"\nFashion-MNIST main job, {a.epochs} epoch(s){f', first {a.limit} training images' if a.limit else ''}, "
          f"{a.threads} threads (training: images/s and seconds; evaluation: seconds for the test set)")
    print(f"{'run':22} {'images/s':>9} {'train s':>8} {'eval s':>7} {'loss':>7} {'accuracy':>8}")
    for k, r in runs.items():
        print(f"{k:22} {r['images_per_s']:9.0f} {r['train_s']:8.2f} {r['eval_s']:7.2f} {r['loss']:7.4f} "
              f"{100 * r['accuracy']:7.2f}%")
    print(f"\nPyTorch time / oneflow_c time (PyTorch's better format: training {best_train[8:]}, evaluation "
          f"{best_eval[8:]}; target >= {TARGET})")
    print(f"{'':22} {'training':>9} {'evaluation':>10}   accuracy oneflow_c vs PyTorch (best training run)")
    targets = benchlib.Targets()
    for k in ("oneflow_c eager", "oneflow_c graph"):
        r = runs[k]
        train_ratio = torch[best_train]["train_s"] / r["train_s"]
        eval_ratio = torch[best_eval]["eval_s"] / r["eval_s"]
        diff = 100 * (r["accuracy"] - torch[best_train]["accuracy"])
        print(f"{k:22} {train_ratio:9.2f} {eval_ratio:10.2f}   {100 * r['accuracy']:.2f}% vs "
              f"{100 * torch[best_train]['accuracy']:.2f}% ({diff:+.2f} points)")
        targets.at_least(f"{k}: PyTorch / oneflow_c training time", train_ratio, TARGET)
        targets.at_least(f"{k}: PyTorch / oneflow_c evaluation time", eval_ratio, TARGET)
        if a.accuracy_tolerance is not None:
            targets.at_most(f"{k}: accuracy difference to PyTorch (points)", abs(diff), a.accuracy_tolerance)
    return targets.report()


if __name__ == "__main__":
    sys.exit(main())
