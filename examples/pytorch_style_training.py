"""An ordinary PyTorch training script, run by ember: only the import lines differ.

Swap the four ``ember`` imports below for ``torch`` ones and the same file runs under
PyTorch (tests/test_examples.py does exactly that when torch is installed). The data are read
from a NumPy file (``digits.npz``, written by ``digits_npz.py`` next to this script), the way
any PyTorch script can read them.

Run: uv run python examples/pytorch_style_training.py [--epochs 8] [--out DIR]
Writes into DIR (default ``example-output/pytorch_style_training``): digits.npz, model.pt.
"""

import argparse
from pathlib import Path

import numpy as np
from digits_npz import write_digits_npz

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset, random_split

DEFAULT_OUT = "example-output/pytorch_style_training"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc1 = nn.Linear(8 * 4 * 4, 64)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = torch.flatten(x, 1)
        return self.fc2(self.drop(F.relu(self.fc1(x))))


def main(epochs: int = 8, out_dir: str = DEFAULT_OUT) -> float:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    print(f"writing into {out}/")
    torch.manual_seed(0)
    digits = np.load(write_digits_npz(out / "digits.npz"))
    images, labels = torch.from_numpy(digits["images"]), torch.from_numpy(digits["labels"])
    data = TensorDataset(images.float().unsqueeze(1) / 16.0, labels)
    train, test = random_split(data, [0.8, 0.2], generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train, batch_size=64, shuffle=True)
    test_loader = DataLoader(test, batch_size=256)
    model = Net()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    for epoch in range(epochs):
        model.train()
        loss_sum = seen = 0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y, label_smoothing=0.05)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            # the epoch's mean loss, each batch weighted by its size (the last one is smaller)
            loss_sum += loss.item() * len(y)
            seen += len(y)
        scheduler.step()
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for x, y in test_loader:
                correct += (model(x).argmax(dim=1) == y).sum().item()
                total += y.numel()
        print(
            f"epoch {epoch + 1}: mean training loss {loss_sum / seen:.4f}, "
            f"held-out accuracy {correct / total:.3f}"
        )
    torch.save(model.state_dict(), out / "model.pt")
    restored = Net()
    restored.load_state_dict(torch.load(out / "model.pt"))
    print(f"saved {out / 'model.pt'}")
    return correct / total


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8, help="passes over the data (default 8)")
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help=f"folder for the outputs (default {DEFAULT_OUT})"
    )
    args = parser.parse_args()
    main(args.epochs, args.out)
