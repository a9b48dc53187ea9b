"""Where a ResNet training step's time goes: runs bench/cpu_train_step's lazy graph for one model and
batch with the graph profiled (of_graph_options_t.profile, the tool's --profile), and prints the time per
step of each op (the sum of each of its steps' shortest run, which leaves out the first run's set-up and
a busy machine's outliers), the longest steps with their shapes and, with --pytorch, PyTorch's best step
measured in the same run.

It also prints the bound that the convolutions set: PyTorch's step / the convolutions' time alone is the
largest ratio reachable with these convolution kernels, whatever happens around them.

  /usr/bin/python3 bench/profile_step.py --model resnet50 --batch 4 --threads 2 --pytorch

Profiling times each step of the graph apart (on the CPU at no cost worth noting: a clock read per
step), so the step's median printed beside is that of the profiled runs."""
import argparse
import os
import re
import sys
import tempfile

import benchlib

OP_LINE = re.compile(r"^    (\S+): (\d+) steps?, ([\d.]+) ms per run \(([\d.]+)%\), ([\d.]+) ms at best$")
STEP_LINE = re.compile(r"^  step #\d+: .*  \(([\d.]+) ms, best ([\d.]+)\)$")
PLAN_LINE = re.compile(r"^  profile: (\d+) runs, ([\d.]+) ms per run \(best ([\d.]+)\); in the steps ([\d.]+) ms per run, "
                       r"([\d.]+) ms at best$")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=os.path.join(benchlib.REPO, "build", "release"))
    p.add_argument("--model", default="resnet50", choices=["resnet18", "resnet50"])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=6)
    p.add_argument("--top", type=int, default=15, help="how many of the longest steps to list")
    p.add_argument("--pytorch", action="store_true", help="also time PyTorch's step (its better format)")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        dump_path = os.path.join(tmp, "dump.txt")
        cmd = [os.path.join(args.build_dir, "bench", "cpu_train_step"), "--model", args.model, "--batch",
               str(args.batch), "--mode", "lazy", "--threads", str(args.threads), "--warmup", str(args.warmup),
               "--iters", str(args.iters), "--profile", dump_path]
        step = benchlib.records(benchlib.run(cmd, args.threads), "model")[-1]
        with open(dump_path) as f:
            dump = f.read().splitlines()
    ops = [m.groups() for m in map(OP_LINE.match, dump) if m]
    steps = [(float(m.group(2)), line.strip()) for line, m in ((l, STEP_LINE.match(l)) for l in dump) if m]
    plan = [m.groups() for m in map(PLAN_LINE.match, dump) if m]
    if not ops or not steps or not plan:
        sys.exit("no profile in the graph's dump: is cpu_train_step of this build?")
    runs, run_mean, run_best, steps_mean, steps_best = plan[-1]

    median = step["median_ms"]
    in_steps = sum(float(o[4]) for o in ops)
    print(f"{args.model} batch {args.batch}, lazy, {args.threads} threads: step median {median:.1f} ms, "
          f"{step['gflop']:.2f} GFLOP ({step['gflops']:.1f} GFLOP/s); per op, the sum of its steps' best runs:")
    print(f"{'ms':>9} {'share':>6} {'steps':>6}  op")
    for name, count, _, _, best in sorted(ops, key=lambda o: -float(o[4])):
        print(f"{float(best):9.1f} {100 * float(best) / median:5.1f}% {int(count):6d}  {name}")
    print(f"{median - in_steps:9.1f} {100 * (median - in_steps) / median:5.1f}%         the median's excess over the steps' best "
          "runs (slower runs of the steps, the run's own work)")
    print(f"profiled runs ({runs}, the first with its set-up): {float(run_mean):.1f} ms per run (best "
          f"{float(run_best):.1f}), of which in the steps {float(steps_mean):.1f}: "
          f"{float(run_mean) - float(steps_mean):.2f} ms per run outside them (binding inputs, copying outputs)")
    conv = sum(float(o[4]) for o in ops if o[0].startswith("conv2d"))
    print(f"convolutions: {conv:.1f} ms; the step's flops over their time: {step['gflop'] / conv * 1000:.1f} GFLOP/s")
    print(f"the {args.top} longest steps (best run, ms):")
    for best, text in sorted(steps, key=lambda s: -s[0])[:args.top]:
        print(f"{best:9.3f}  {text[:200]}")
    if args.pytorch:
        pt_cmd = [sys.executable, os.path.join(benchlib.HERE, "pytorch_train_step.py"), "--model", args.model,
                  "--batch", str(args.batch), "--threads", str(args.threads), "--warmup", str(args.warmup),
                  "--iters", str(args.iters)]
        pt = min(benchlib.records(benchlib.run(pt_cmd, args.threads), "model"), key=lambda r: r["median_ms"])
        print(f"PyTorch ({pt['format']}): {pt['median_ms']:.1f} ms; PyTorch / this step {pt['median_ms'] / median:.2f}; "
              f"PyTorch / the convolutions alone {pt['median_ms'] / conv:.2f} (the bound with these kernels)")


if __name__ == "__main__":
    main()
