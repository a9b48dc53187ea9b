#!/usr/bin/env python3
"""The PyTorch side of bench/cpu_train_step.c: the same models, input shapes and training step (forward,
cross-entropy, backward, SGD with momentum 0.9) timed the same way (median after warm-up), eagerly on the
CPU at the same thread count, in two memory formats: NCHW (PyTorch's default) and channels_last (model
and input converted with .to(memory_format=torch.channels_last); oneDNN's preferred layout, often the
faster one). The MLP has no spatial dims and runs in the default format only.

    /usr/bin/python3 bench/pytorch_train_step.py [--model all|LIST] [--batch N] [--threads N]
        [--format both|nchw|channels_last] [--warmup N] [--iters N]

LIST is comma-separated (mlp, resnet18, resnet50); the default batches are those of cpu_train_step
(resnet50 at 1, 4 and 16), --batch overrides them. Prints one line per model, batch and format:
"model=... impl=pytorch mode=eager format=nchw|channels_last batch=... threads=... warmup=... iters=...
median_ms=... min_ms=... max_rss_mb=..."; max_rss_mb is the process's peak so far, so run one model and
format per process for a per-model figure (bench/compare_cpu.py does).
"""
import argparse
import os
import time

import torch
import torchvision

import benchlib


def default_steps(name, batch):
    """(warmup, iters) as in cpu_train_step.c: enough for a stable median without taking minutes."""
    if name == "mlp":
        return 200, 2000
    images = batch * (1 if name == "resnet50" else 0.1)  # resnet18 at 64x64: ~1/10 of a resnet50 image
    return (3, 7) if images <= 1 else (2, 5) if images <= 4 else (1, 3)


def make(name, batch):
    spec = benchlib.MODELS[name]
    if name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    else:
        model = getattr(torchvision.models, name)(num_classes=spec["classes"])
    return model, torch.randn(batch, *spec["input"]), spec["classes"]


def bench(name, batch, fmt, threads, warmup, iters):
    torch.manual_seed(0)
    model, x, classes = make(name, batch)
    if fmt == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    model.train()
    target = torch.randint(0, classes, (batch,))
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
    print(benchlib.line(model=name, impl="pytorch", mode="eager", format=fmt, batch=batch, threads=threads,
                        warmup=warmup, iters=iters, median_ms=times[len(times) // 2], min_ms=times[0],
                        max_rss_mb=benchlib.max_rss_mb()), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="all")
    p.add_argument("--batch", type=int, default=0, help="override the default batch sizes")
    p.add_argument("--threads", type=int, default=0, help="default: all cores")
    p.add_argument("--format", default="both", choices=("both", "nchw", "channels_last"))
    p.add_argument("--warmup", type=int, default=-1)
    p.add_argument("--iters", type=int, default=-1)
    a = p.parse_args()
    names = list(benchlib.MODELS) if a.model == "all" else a.model.split(",")
    for name in names:
        if name not in benchlib.MODELS:
            p.error(f"unknown model {name} (known: {', '.join(benchlib.MODELS)})")
    threads = a.threads or os.cpu_count()
    torch.set_num_threads(threads)
    formats = ("nchw", "channels_last") if a.format == "both" else (a.format,)
    for name in names:
        for batch in (a.batch,) if a.batch > 0 else benchlib.MODELS[name]["batches"]:
            warmup, iters = default_steps(name, batch)
            warmup = a.warmup if a.warmup >= 0 else warmup
            iters = a.iters if a.iters > 0 else iters
            for fmt in ("nchw",) if name == "mlp" else formats:
                bench(name, batch, fmt, threads, warmup, iters)


if __name__ == "__main__":
    main()
