#!/usr/bin/env python3
"""The PyTorch side of bench/cpu_train_step.c: the same models, inputs and training step (forward,
cross-entropy, backward, SGD with momentum 0.9) timed the same way (median after warm-up), eagerly on
the CPU with the same thread count. Prints "model=... batch=... threads=... median_ms=... min_ms=...".

    /usr/bin/python3 bench/pytorch_train_step.py [--model all|resnet50|resnet18|mlp] [--threads N]
"""
import argparse
import os
import time

import torch
import torchvision


def make(name):
    if name == "resnet50":
        return torchvision.models.resnet50(num_classes=1000), torch.randn(1, 3, 224, 224), 1000
    if name == "resnet18":
        return torchvision.models.resnet18(num_classes=1000), torch.randn(8, 3, 64, 64), 1000
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    return model, torch.randn(32, 64), 10


def bench(name, threads, warmup, iters):
    torch.manual_seed(0)
    model, x, classes = make(name)
    model.train()
    target = torch.randint(0, classes, (x.shape[0],))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for i in range(warmup + iters):
        t0 = time.perf_counter()
        loss = loss_fn(model(x), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print(f"model={name} batch={x.shape[0]} threads={threads} median_ms={times[len(times) // 2]:.4f} "
          f"min_ms={times[0]:.4f}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="all")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--warmup", type=int, default=-1)
    p.add_argument("--iters", type=int, default=-1)
    a = p.parse_args()
    threads = a.threads or os.cpu_count()
    torch.set_num_threads(threads)
    for name in ("mlp", "resnet18", "resnet50"):
        if a.model not in ("all", name):
            continue
        is_mlp, is_r50 = name == "mlp", name == "resnet50"
        warmup = a.warmup if a.warmup >= 0 else (200 if is_mlp else 3)
        iters = a.iters if a.iters > 0 else (2000 if is_mlp else (7 if is_r50 else 11))
        bench(name, threads, warmup, iters)


if __name__ == "__main__":
    main()
