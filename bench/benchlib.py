"""Helpers shared by the Python programs of bench/: the environment both sides run in, running a
benchmark program and reading its "key=value" lines, peak memory, the models' shapes, and the targets'
bookkeeping. Plain Python (no torch import), so the compare scripts start fast."""
import os
import resource
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# The models of the CPU training-step comparison, as bench/cpu_train_step.c and
# bench/libtorch_train_step.cpp build them: input shape without the batch dim, classes, default batches.
MODELS = {
    "mlp": {"input": (64,), "classes": 10, "batches": (32,)},
    "resnet18": {"input": (3, 64, 64), "classes": 1000, "batches": (8,)},
    "resnet50": {"input": (3, 224, 224), "classes": 1000, "batches": (1, 4, 16)},
}


def bench_env(threads):
    """The environment for every benchmarked process: OpenMP threads sleep when idle instead of spinning
    (OMP_WAIT_POLICY=passive; with spinning, a machine with more runnable threads than cores makes steps
    2-10x slower at random), and OpenMP's default team has `threads` threads on both sides."""
    env = dict(os.environ)
    env["OMP_WAIT_POLICY"] = "passive"
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def run(cmd, threads, echo=False):
    """Runs cmd in bench_env(threads) and returns its stdout; on failure prints its stderr and raises."""
    if echo:
        print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    p = subprocess.run(cmd, env=bench_env(threads), capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise RuntimeError(f"{' '.join(cmd)} exited with {p.returncode}")
    return p.stdout


def records(text, first_key, prefix=""):
    """The lines of `text` that start with `prefix` and are then made only of key=value words, the first
    being `first_key`, as dicts with numbers converted (int, else float, else the string)."""
    out = []
    for line in text.splitlines():
        if not line.startswith(prefix):
            continue
        words = line[len(prefix):].split()
        if not words or not words[0].startswith(first_key + "=") or not all("=" in w for w in words):
            continue
        rec = {}
        for w in words:
            k, v = w.split("=", 1)
            for convert in (int, float):
                try:
                    v = convert(v)
                    break
                except ValueError:
                    pass
            rec[k] = v
        out.append(rec)
    return out


def max_rss_mb():
    """This process's peak resident memory so far, in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def line(**fields):
    """One "key=value ..." line in the order given (floats with 4 decimals)."""
    return " ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items())


class Targets:
    """Collects target checks: each is printed as a line when missed, and any miss makes the exit code 1."""

    def __init__(self):
        self.missed = []
        self.unchecked = []

    def at_least(self, what, value, target):
        if value is None:
            self.unchecked.append(what)
        elif value < target:
            self.missed.append(f"{what}: {value:.2f}, target >= {target:g}")

    def at_most(self, what, value, target):
        if value is None:
            self.unchecked.append(what)
        elif value > target:
            self.missed.append(f"{what}: {value:.2f}, target <= {target:g}")

    def report(self):
        """Prints the missed and unchecked targets and returns the exit code."""
        for what in self.unchecked:
            print(f"NOT CHECKED  {what} (not measured)")
        for what in self.missed:
            print(f"MISSED       {what}")
        if not self.missed:
            print("all checked targets met")
        return 1 if self.missed else 0
