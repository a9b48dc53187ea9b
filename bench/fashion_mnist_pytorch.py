#!/usr/bin/env python3
"""The PyTorch twin of the main job, examples/fashion_mnist/train_fashion_mnist.c, for
bench/compare_fashion_mnist.py: the same network (conv3x3 + BN + ReLU stem; three residual blocks of two
conv3x3 + BN, the last two halving the resolution and doubling the width with a 1x1 conv + BN shortcut;
global average pooling; linear), the same initialisation (kaiming normal fan_out/relu for the convs, BN
weight 1 and bias 0, the linear weight and bias uniform in +-1/sqrt(in)), the same optimizer (SGD,
momentum 0.9, nesterov, weight decay 5e-4 on every parameter) and cosine learning-rate decay from --lr to
0 over the whole run, set before every step; the same data (the gz IDX files of Debian's
dataset-fashion-mnist), normalisation ((x/255 - 0.2860) / 0.3530, per batch from the uint8 images), batch
size, per-epoch shuffle (the example's LCG Fisher-Yates, so the batches are the same), and the same
evaluation (batches of 256, batch norm in eval mode, no autograd). Like the example it reads each step's
loss back (.item()). Only the random initial weights differ.

Data parallel like the example: with --world-size N > 1 (or OF_WORLD_SIZE, OF_RANK and OF_RENDEZVOUS in
the environment, as scripts/run-distributed.sh sets them) the model is wrapped in
DistributedDataParallel over the gloo backend (a rendezvous directory: a file store in it; tcp://HOST:PORT:
a TCP store), and rank r trains on its 1/N share of each global batch, as the example's ranks do. DDP's
defaults otherwise (25 MiB buckets, rank 0's buffers broadcast every step); images_per_s is this rank's.

    /usr/bin/python3 bench/fashion_mnist_pytorch.py [--epochs N] [--threads N] [--limit N] [--batch-size N]
        [--width N] [--lr X] [--seed N] [--channels-last] [--data DIR]
        [--world-size N --rank R --rendezvous DIR|tcp://HOST:PORT]

Prints per epoch a line for people and a "bench:" line of key=value words, the same as the example's
--summary line: epoch, train_s (the training part), eval_s (the evaluation part), images_per_s (training
images / train_s), loss (mean training loss) and accuracy (on the test set, in [0, 1]).
"""
import argparse
import gzip
import math
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import benchlib

MEAN, STD = 0.2860, 0.3530  # of the Fashion-MNIST training images, as in the example
EVAL_BATCH = 256


def load_idx(path):
    """A gz IDX file of uint8 data as a uint8 tensor of its shape."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    if magic >> 8 != 0x08:
        raise ValueError(f"{path}: not an IDX file of uint8 data")
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def load(data_dir, split):
    images = load_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
    labels = load_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz")).long()
    return images.unsqueeze(1), labels  # (N, 1, 28, 28) uint8, (N,) int64


def shuffle(n, state):
    """The example's Fisher-Yates with its LCG: (order, new state), the same order for the same seed."""
    order = list(range(n))
    for i in range(n, 1, -1):
        state = (state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        j = (state >> 33) % i
        order[i - 1], order[j] = order[j], order[i - 1]
    return order, state


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.Sequential(Block(width, width, 1), Block(width, 2 * width, 2), Block(2 * width, 4 * width, 2))
        self.fc = nn.Linear(4 * width, 10)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        bound = 1.0 / math.sqrt(4 * width)
        nn.init.uniform_(self.fc.weight, -bound, bound)
        nn.init.uniform_(self.fc.bias, -bound, bound)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1)
        return self.fc(torch.flatten(x, 1))


def batch(images, labels, index, memory_format):
    x = (images[index].float() / 255.0 - MEAN) / STD
    return x.contiguous(memory_format=memory_format), labels[index]


def evaluate(model, images, labels, memory_format):
    model.eval()
    correct = 0
    with torch.no_grad():
        for first in range(0, len(labels), EVAL_BATCH):
            x, y = batch(images, labels, slice(first, first + EVAL_BATCH), memory_format)
            correct += int((model(x).argmax(1) == y).sum())
    model.train()
    return correct / len(labels)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--threads", type=int, default=0, help="default: all cores")
    p.add_argument("--limit", type=int, default=0, help="use only the first N training images")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--channels-last", action="store_true", help="model and batches in channels_last")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--world-size", type=int, default=int(os.environ.get("OF_WORLD_SIZE", "1")))
    p.add_argument("--rank", type=int, default=int(os.environ.get("OF_RANK", "0")))
    p.add_argument("--rendezvous", default=os.environ.get("OF_RENDEZVOUS"))
    a = p.parse_args()
    if not (a.world_size >= 1 and 0 <= a.rank < a.world_size and a.batch_size >= a.world_size
            and (a.world_size == 1 or a.rendezvous)):
        p.error("data parallel: world size >= 1, rank in [0, world size), batch size >= world size, and a "
                "rendezvous for more than one rank")
    torch.set_num_threads(a.threads or os.cpu_count())
    torch.manual_seed(a.seed)
    train_images, train_labels = load(a.data, "train")
    test_images, test_labels = load(a.data, "t10k")
    if 0 < a.limit < len(train_labels):
        train_images, train_labels = train_images[:a.limit], train_labels[:a.limit]
    memory_format = torch.channels_last if a.channels_last else torch.contiguous_format
    model = Net(a.width).to(memory_format=memory_format)
    if a.world_size > 1:
        import torch.distributed as dist
        init = a.rendezvous if a.rendezvous.startswith("tcp://") else "file://" + os.path.join(a.rendezvous, "torch")
        dist.init_process_group("gloo", init_method=init, rank=a.rank, world_size=a.world_size)
        model = torch.nn.parallel.DistributedDataParallel(model)
        print(f"data parallel (DDP, gloo): rank {a.rank} of {a.world_size}, {a.batch_size // a.world_size} images "
              f"of each batch of {a.batch_size}", flush=True)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    n = len(train_labels)
    steps_per_epoch = (n + a.batch_size - 1) // a.batch_size
    total_steps = steps_per_epoch * a.epochs
    fmt = "channels_last" if a.channels_last else "NCHW"
    print(f"Fashion-MNIST (PyTorch {torch.__version__}, {fmt}, {torch.get_num_threads()} threads): {n} training "
          f"and {len(test_labels)} test images, width {a.width}, {a.epochs} epochs, batch {a.batch_size}", flush=True)
    rng, step = a.seed, 0
    for epoch in range(1, a.epochs + 1):
        order, rng = shuffle(n, rng)
        order = torch.tensor(order)
        t0 = time.perf_counter()
        loss_sum, seen = 0.0, 0
        for first in range(0, n, a.batch_size):
            share = min(a.batch_size, n - first) // a.world_size  # this rank's part of the global batch
            if share == 0:
                break
            for group in opt.param_groups:
                group["lr"] = a.lr * 0.5 * (1.0 + math.cos(math.pi * step / total_steps))
            start = first + a.rank * share
            x, y = batch(train_images, train_labels, order[start:start + share], memory_format)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(y)
            seen += len(y)
            step += 1
        train_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        accuracy = evaluate(model, test_images, test_labels, memory_format)
        eval_s = time.perf_counter() - t1
        print(f"epoch {epoch}/{a.epochs}: train loss {loss_sum / seen:.4f}, test accuracy {100 * accuracy:.2f}%, "
              f"training {train_s:.1f} s ({seen / train_s:.0f} img/s), evaluation {eval_s:.1f} s")
        print("bench: " + benchlib.line(epoch=epoch, train_s=train_s, eval_s=eval_s, images_per_s=seen / train_s,
                                        loss=loss_sum / seen, accuracy=accuracy), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
