"""An ordinary PyTorch training script, run by ember: only the import line differs.

Run: uv run python examples/pytorch_style_training.py
"""

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset, random_split


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


def main(epochs: int = 8, out: str = "pytorch_style.safetensors") -> float:
    torch.manual_seed(0)
    images, labels = torch.datasets.load_digits()
    data = TensorDataset(images.float().unsqueeze(1) / 16.0, labels)
    train, test = random_split(data, [0.8, 0.2], generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train, batch_size=64, shuffle=True)
    test_loader = DataLoader(test, batch_size=256)
    model = Net()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y, label_smoothing=0.05)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
        scheduler.step()
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for x, y in test_loader:
                correct += (model(x).argmax(dim=1) == y).sum().item()
                total += y.numel()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, held-out accuracy {correct / total:.3f}")
    torch.save(model.state_dict(), out)
    restored = Net()
    restored.load_state_dict(torch.load(out))
    return correct / total


if __name__ == "__main__":
    main()
