#!/usr/bin/env python3
"""Exports torchvision's ResNet-18 and ResNet-50 (1000 classes, default initialisation) as TorchScript
(torch.jit.script) into DIR as resnet18.pt and resnet50.pt, for bench/libtorch_train_step.cpp, which loads
and trains them with libtorch's C++ API (the ResNets are not part of libtorch's C++ API itself).

    /usr/bin/python3 bench/export_torchscript.py DIR [--model resnet18,resnet50]
"""
import argparse
import os

import torch
import torchvision


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir")
    p.add_argument("--model", default="resnet18,resnet50")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    torch.manual_seed(0)
    for name in a.model.split(","):
        model = getattr(torchvision.models, name)(num_classes=1000)
        path = os.path.join(a.dir, name + ".pt")
        torch.jit.script(model).save(path)
        print(f"exported {name} to {path}")


if __name__ == "__main__":
    main()
