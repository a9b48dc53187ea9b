#!/usr/bin/env python3
"""The PyTorch twin of examples/char_lm/train_char_lm.c: the same corpus and vocabulary, the same
GPT-style pre-norm transformer, the same initial weights (read from the example's --save-init file),
the same random windows (the example's 64-bit LCG, seeded alike), AdamW with the same settings, and
the same number of steps. Prints "step N loss X" every --log-every steps and the tokens/s of the
training steps (the first, warm-up step excluded), so that bench/compare_char_lm.py can set the two
side by side.

    /usr/bin/python3 bench/char_lm_pytorch.py --init init.safetensors --steps 200 [--threads N] ...

PyTorch 1.13 (Debian's python3-torch) has no F.scaled_dot_product_attention: attention is written out
as softmax(q k^T / sqrt(d) + causal mask) v, as a user of that version would.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

MASK64 = (1 << 64) - 1


class Lcg:
    """The example's next_random: state = state * a + c (mod 2^64), returns state >> 33."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & MASK64
        return self.state >> 33


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": np.float32, "F64": np.float64, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[begin:end], dtype=dtypes[info["dtype"]])
                                     .reshape(info["shape"]).copy())
    return out


def corpus(paths):
    """The example's corpus: the paths in order, a directory's regular files in byte order of their names."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            names = sorted((n for n in os.listdir(p) if not n.startswith(".") and os.path.isfile(os.path.join(p, n))),
                           key=os.fsencode)
            files += [os.path.join(p, n) for n in names]
        else:
            files.append(p)
    text = b"".join(open(f, "rb").read() for f in files)
    vocab = sorted(set(text))
    token = {b: i for i, b in enumerate(vocab)}
    return np.array([token[b] for b in text], dtype=np.int64), len(vocab)


def forward(w, tokens, layers, heads):
    batch, seq = tokens.shape
    x = F.embedding(tokens, w["tok_emb.weight"]) + F.embedding(torch.arange(seq), w["pos_emb.weight"])
    d = x.shape[-1]
    causal = torch.full((seq, seq), float("-inf")).triu(1)
    for l in range(layers):
        p = f"blocks.{l}."
        h = F.layer_norm(x, (d,), w[p + "ln1.weight"], w[p + "ln1.bias"], 1e-5)
        qkv = F.linear(h, w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"])
        q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(batch, seq, heads, d // heads).transpose(1, 2) for i in range(3))
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // heads) + causal, dim=-1) @ v
        x = x + F.linear(att.transpose(1, 2).reshape(batch, seq, d), w[p + "attn.proj.weight"], w[p + "attn.proj.bias"])
        h = F.layer_norm(x, (d,), w[p + "ln2.weight"], w[p + "ln2.bias"], 1e-5)
        x = x + F.linear(F.gelu(F.linear(h, w[p + "mlp.fc1.weight"], w[p + "mlp.fc1.bias"])),
                         w[p + "mlp.fc2.weight"], w[p + "mlp.fc2.bias"])
    x = F.layer_norm(x, (d,), w["ln_f.weight"], w["ln_f.bias"], 1e-5)
    return F.linear(x, w["tok_emb.weight"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", required=True, help="the example's --save-init file")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--corpus", action="append")
    ap.add_argument("--log-every", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    text, vocab = corpus(a.corpus or ["/usr/share/common-licenses"])
    w = read_safetensors(a.init)
    for t in w.values():
        t.requires_grad_(True)
    params = list(w.values())
    opt = torch.optim.AdamW(params, lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    rng = Lcg(a.seed)
    span = len(text) - a.context - 1
    timed_tokens, timed_seconds = 0, 0.0
    for step in range(1, a.steps + 1):
        offsets = [rng.next() % span for _ in range(a.batch_size)]
        windows = np.stack([text[o:o + a.context + 1] for o in offsets])
        tokens, targets = torch.from_numpy(windows[:, :-1]), torch.from_numpy(windows[:, 1:])
        started = time.perf_counter()
        logits = forward(w, tokens, a.layers, a.heads)
        loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()
        if step > 1:
            timed_seconds += time.perf_counter() - started
            timed_tokens += a.batch_size * a.context
        if step % a.log_every == 0:
            print(f"step {step} loss {value:.6f}", flush=True)
    print(f"pytorch {torch.__version__}: {a.steps} steps, {timed_tokens / max(timed_seconds, 1e-9):.0f} tokens/s "
          f"(threads {a.threads})")


if __name__ == "__main__":
    sys.exit(main())
