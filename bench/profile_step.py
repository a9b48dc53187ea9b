"""Where a ResNet training step's time goes: runs bench/cpu_train_step (one model, batch and mode) with
ONEDNN_VERBOSE=1, sums the time of oneDNN's primitive executions per step by kind (convolution forward,
backward data, backward weights; reorders; batch norm; the rest), and prints them beside the step's
median and, with --pytorch, PyTorch's best step measured in the same run. The time outside oneDNN
(the engine's own kernels: fused elementwise steps, pooling, the optimizer update) is the median minus
oneDNN's share.

It also prints the bound that the convolutions set: PyTorch's step / the convolution primitives' time
alone is the largest ratio reachable with these convolution kernels (oneDNN's, which PyTorch runs too),
whatever happens around them.

  /usr/bin/python3 bench/profile_step.py --model resnet50 --batch 4 --threads 2 --pytorch

A step is counted by the stem convolution's forward executions (one per step, in both modes); the
verbose times include the warm-up steps, whose primitives are cached, so they are per-step averages."""
import argparse
import collections
import os
import sys

import benchlib


def kind_of(fields):
    """The category of one `onednn_verbose,exec,...` line split at commas."""
    primitive, impl, prop = fields[3], fields[4], fields[5]
    if primitive == "convolution":
        return f"convolution {prop} ({impl})"
    if primitive == "reorder":
        formats = fields[6].split()
        return f"reorder {formats[0].split(':')[3]} -> {formats[1].split(':')[3]}"
    if primitive == "batch_normalization":
        return f"batch norm {prop}"
    return f"{primitive} {prop}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=os.path.join(benchlib.REPO, "build", "release"))
    p.add_argument("--model", default="resnet50", choices=["resnet18", "resnet50"])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--mode", default="lazy", choices=["eager", "lazy"])
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=6)
    p.add_argument("--pytorch", action="store_true", help="also time PyTorch's step (its better format)")
    args = p.parse_args()

    os.environ["ONEDNN_VERBOSE"] = "1"
    cmd = [os.path.join(args.build_dir, "bench", "cpu_train_step"), "--model", args.model, "--batch",
           str(args.batch), "--mode", args.mode, "--threads", str(args.threads), "--warmup", str(args.warmup),
           "--iters", str(args.iters)]
    out = benchlib.run(cmd, args.threads)
    del os.environ["ONEDNN_VERBOSE"]
    step = benchlib.records(out, "model")[-1]
    totals = collections.defaultdict(float)
    calls = collections.Counter()
    steps = 0
    for line in out.splitlines():
        if not line.startswith("onednn_verbose,exec,"):
            continue
        fields = line.split(",")
        kind = kind_of(fields)
        totals[kind] += float(fields[-1])
        calls[kind] += 1
        if fields[3] == "convolution" and fields[5].startswith("forward") and "_ic3oc" in fields[-2]:
            steps += 1
    if steps == 0:
        sys.exit("no stem convolution in oneDNN's log: is this a ResNet on a build with oneDNN?")

    median = step["median_ms"]
    conv = sum(v for k, v in totals.items() if k.startswith("convolution")) / steps
    dnnl = sum(totals.values()) / steps
    print(f"{args.model} batch {args.batch}, {args.mode}, {args.threads} threads: step median {median:.1f} ms, "
          f"{step['gflop']:.2f} GFLOP ({step['gflops']:.1f} GFLOP/s); oneDNN primitives per step "
          f"(average of {steps} steps):")
    print(f"{'ms':>9} {'share':>6} {'calls':>6}  primitive")
    for kind, total in sorted(totals.items(), key=lambda kv: -kv[1]):
        ms = total / steps
        print(f"{ms:9.1f} {100 * ms / median:5.1f}% {calls[kind] // steps:6d}  {kind}")
    print(f"{median - dnnl:9.1f} {100 * (median - dnnl) / median:5.1f}%         outside oneDNN (the engine's own "
          "kernels and overheads)")
    print(f"convolutions: {conv:.1f} ms; the step's flops over their time: {step['gflop'] / conv * 1000:.1f} GFLOP/s")
    if args.pytorch:
        pt_cmd = [sys.executable, os.path.join(benchlib.HERE, "pytorch_train_step.py"), "--model", args.model,
                  "--batch", str(args.batch), "--threads", str(args.threads), "--warmup", str(args.warmup),
                  "--iters", str(args.iters)]
        pt = min(benchlib.records(benchlib.run(pt_cmd, args.threads), "model"), key=lambda r: r["median_ms"])
        print(f"PyTorch ({pt['format']}): {pt['median_ms']:.1f} ms; PyTorch / this step {pt['median_ms'] / median:.2f}; "
              f"PyTorch / the convolutions alone {pt['median_ms'] / conv:.2f} (the bound with these kernels)")


if __name__ == "__main__":
    main()
