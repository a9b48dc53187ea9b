#!/usr/bin/env python3
"""The CPU comparison in one table: runs, at the same thread count and one after the other,

    fma_peak                  the CPU's fp32 FMA peak (GFLOP/s on 1 and on N threads)
    cpu_train_step            oneflow_c's training step, eager and lazy (bench/cpu_train_step.c)
    pytorch_train_step.py     PyTorch's, NCHW and channels_last (the faster one is compared)
    libtorch_train_step       libtorch's (C++, no Python), when built (Debian's libtorch-dev); its ResNets
                              are exported by export_torchscript.py and run in PyTorch's faster format

for each model and batch (mlp 32, resnet18 8, resnet50 1, 4 and 16), each model, mode and format in its
own process so that its peak resident memory (ru_maxrss) is its own, and prints one table of the medians
with the ratios (x/y = x ms / y ms). With --rounds R every program of a row runs R times, the rounds
interleaved (eager, lazy, PyTorch's formats, libtorch, then again), and the table shows the median of each
program's R medians, and under it the range of PT/lazy and PT/eager over the rounds: on a shared machine
one program's slow run then neither makes nor breaks a ratio.

    PT/lazy, PT/eager   best PyTorch / oneflow_c        above 1: oneflow_c is faster
    lazy/eager          oneflow_c lazy / eager          at most 1: the graph is at least as fast
    LT/lazy             libtorch / oneflow_c lazy       above 1: oneflow_c is faster
    GFLOP/s, %peak      the lazy step's flops (counted from the shapes by cpu_train_step) per second,
                        and that as a share of the N-thread FMA peak measured in this run
    RSS                 peak resident MiB of the eager, lazy and PyTorch processes (PyTorch: the smaller
                        of its two formats)

Targets (TARGETS below): PT/lazy >= 1.5 and PT/eager >= 1.2 on every row (>= 3 for the MLP, the target of
the earlier comparison); lazy/eager <= 1; LT/lazy >= 10 for the MLP; resnet50 batch 16 lazy >= 45% of the
peak; lazy RSS <= PyTorch RSS. A line per missed target; exits 1 when one is missed.

    /usr/bin/python3 bench/compare_cpu.py [--build-dir build/release] [--threads N] [--model all|LIST]
        [--batch N] [--warmup N] [--iters N] [--rounds R]
"""
import argparse
import os
import statistics
import sys
import tempfile

import benchlib

TARGETS = {
    "pytorch_over_lazy": 1.5,
    "pytorch_over_eager": 1.2,
    "mlp_pytorch_over_ours": 3.0,  # both modes; the MLP target of the earlier comparison
    "lazy_over_eager": 1.0,  # at most
    "mlp_libtorch_over_lazy": 10.0,
    "peak_share": 0.45,  # of the N-thread FMA peak, resnet50 batch 16 lazy
}


def fmt_ms(v):
    return "-" if v is None else f"{v:.3f}" if v < 100 else f"{v:.1f}"


def fmt_ratio(v):
    return "-" if v is None else f"{v:.2f}"


def ratio(a, b):
    return None if a is None or b is None else a / b


class Row:
    """One model and batch: the records of each round, by program (eager, lazy, a PyTorch format, libtorch)."""

    def __init__(self, name, batch, formats, runs):
        self.name, self.batch, self.formats, self.runs = name, batch, formats, runs
        self.torch_format = min(formats, key=self.ms)

    def ms(self, program):
        """The median over the rounds of the program's median step (None if it did not run)."""
        if program not in self.runs[0]:
            return None
        return statistics.median(r[program]["median_ms"] for r in self.runs)

    def rss(self, program):
        return max(r[program]["max_rss_mb"] for r in self.runs)

    def range_over(self, mode):
        ratios = [min(r[f]["median_ms"] for f in self.formats) / r[mode]["median_ms"] for r in self.runs]
        return f"{min(ratios):.2f} - {max(ratios):.2f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=os.path.join(benchlib.REPO, "build", "release"))
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--model", default="all", help="comma-separated: mlp, resnet18, resnet50")
    p.add_argument("--batch", type=int, default=0, help="one batch size for every model instead of the defaults")
    p.add_argument("--warmup", type=int, default=-1, help="default: each program's, by model and batch")
    p.add_argument("--iters", type=int, default=-1, help="default: each program's, by model and batch")
    p.add_argument("--rounds", type=int, default=1, help="runs of every program per row, interleaved (median)")
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    names = list(benchlib.MODELS) if a.model == "all" else a.model.split(",")
    for name in names:
        if name not in benchlib.MODELS:
            p.error(f"unknown model {name}")
    bench_dir = os.path.join(a.build_dir, "bench")
    libtorch = os.path.join(bench_dir, "libtorch_train_step")
    has_libtorch = os.access(libtorch, os.X_OK)
    T = str(a.threads)
    steps = (["--warmup", str(a.warmup)] if a.warmup >= 0 else []) + (["--iters", str(a.iters)] if a.iters > 0 else [])

    def run(cmd):
        """The one record a benchmark process prints (each runs one model, batch, mode and format)."""
        recs = benchlib.records(benchlib.run(cmd, a.threads, echo=True), "model")
        if len(recs) != 1:
            raise RuntimeError(f"expected one result line from {' '.join(cmd)}, got {len(recs)}")
        return recs[0]

    peaks = {r["threads"]: r for r in benchlib.records(
        benchlib.run([os.path.join(bench_dir, "fma_peak"), "--threads", T], a.threads, echo=True), "isa", prefix="fma_peak ")}
    peak = peaks[a.threads]["gflops"]

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        resnets = [n for n in names if n != "mlp"]
        if has_libtorch and resnets:
            benchlib.run([sys.executable, os.path.join(benchlib.HERE, "export_torchscript.py"), tmp, "--model",
                          ",".join(resnets)], a.threads, echo=True)
        for name in names:
            for batch in (a.batch,) if a.batch > 0 else benchlib.MODELS[name]["batches"]:
                common = ["--model", name, "--batch", str(batch), "--threads", T] + steps
                formats = ("nchw",) if name == "mlp" else ("nchw", "channels_last")
                runs = []  # one dict of records per round
                for _ in range(a.rounds):
                    r = {mode: run([os.path.join(bench_dir, "cpu_train_step"), "--mode", mode] + common)
                         for mode in ("eager", "lazy")}
                    for f in formats:
                        r[f] = run([sys.executable, os.path.join(benchlib.HERE, "pytorch_train_step.py"), "--format",
                                    f] + common)
                    if has_libtorch:  # in the round's faster PyTorch format
                        best = min(formats, key=lambda f: r[f]["median_ms"])
                        r["libtorch"] = run([libtorch, "--format", best, "--torchscript-dir", tmp] + common)
                    runs.append(r)
                rows.append(Row(name, batch, formats, runs))
    print(f"\nCPU training step (forward, cross-entropy, backward, SGD momentum 0.9), fp32, {a.threads} threads, "
          f"median ms; x/y = x ms / y ms; libtorch runs in PyTorch's faster format")
    print(f"fp32 FMA peak ({peaks[1]['isa']}): {peaks[1]['gflops']:.1f} GFLOP/s on 1 thread, {peak:.1f} on "
          f"{a.threads} threads")
    head = (f"{'model':9} {'batch':>5} {'eager':>9} {'lazy':>9} {'PyTorch':>9} {'format':>13} {'libtorch':>9} "
            f"{'PT/lazy':>7} {'PT/eager':>8} {'lazy/eager':>10} {'LT/lazy':>7} {'GFLOP':>7} {'GFLOP/s':>7} "
            f"{'%peak':>5}  {'RSS MiB eager/lazy/PyTorch':>26}")
    print(head)
    print("-" * len(head))
    targets = benchlib.Targets()
    for r in rows:
        eager, lazy, pt, lt = r.ms("eager"), r.ms("lazy"), r.ms(r.torch_format), r.ms("libtorch")
        gflops = r.runs[0]["lazy"]["gflop"] * 1000.0 / lazy
        rss = (r.rss("eager"), r.rss("lazy"), min(r.rss(f) for f in r.formats))
        print(f"{r.name:9} {r.batch:5d} {fmt_ms(eager):>9} {fmt_ms(lazy):>9} {fmt_ms(pt):>9} "
              f"{'-' if r.name == 'mlp' else r.torch_format:>13} {fmt_ms(lt):>9} {fmt_ratio(pt / lazy):>7} "
              f"{fmt_ratio(pt / eager):>8} {fmt_ratio(lazy / eager):>10} {fmt_ratio(ratio(lt, lazy)):>7} "
              f"{r.runs[0]['lazy']['gflop']:7.3g} {gflops:7.1f} {100 * gflops / peak:5.1f}  "
              f"{'%.0f / %.0f / %.0f' % rss:>26}")
        row = f"{r.name} batch {r.batch}"
        mlp = r.name == "mlp"
        targets.at_least(f"{row}: PyTorch / lazy", pt / lazy,
                         TARGETS["mlp_pytorch_over_ours" if mlp else "pytorch_over_lazy"])
        targets.at_least(f"{row}: PyTorch / eager", pt / eager,
                         TARGETS["mlp_pytorch_over_ours" if mlp else "pytorch_over_eager"])
        targets.at_most(f"{row}: lazy / eager", lazy / eager, TARGETS["lazy_over_eager"])
        targets.at_most(f"{row}: lazy peak RSS / PyTorch's", rss[1] / rss[2], 1.0)
        if mlp:
            targets.at_least(f"{row}: libtorch / lazy", ratio(lt, lazy), TARGETS["mlp_libtorch_over_lazy"])
        if r.name == "resnet50" and r.batch == 16:
            targets.at_least(f"{row}: lazy GFLOP/s / FMA peak", gflops / peak, TARGETS["peak_share"])
    if a.rounds > 1:
        print(f"\nover the {a.rounds} rounds (min - max of each round's ratio, PyTorch's faster format of the round):")
        for r in rows:
            print(f"{r.name:9} {r.batch:5d}  PT/lazy {r.range_over('lazy')}  PT/eager {r.range_over('eager')}")
    if not has_libtorch:
        print(f"(libtorch: {libtorch} not built; install Debian's libtorch-dev and reconfigure)")
    return targets.report()


if __name__ == "__main__":
    sys.exit(main())
