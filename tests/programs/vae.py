"""A variational auto-encoder on synthetic 28x28 images (pytorch/examples: vae)."""

import argparse

import ember as torch
import ember.nn.functional as F
import ember.optim as optim
from ember import nn
from ember.utils.data import DataLoader, TensorDataset


def synthetic_digits(n, seed=0):
    """Blurry strokes on a 28x28 canvas, values in [0, 1] like MNIST pixels."""
    g = torch.Generator().manual_seed(seed)
    images = torch.zeros(n, 1, 28, 28)
    rows = torch.randint(4, 24, (n,), generator=g)
    cols = torch.randint(4, 24, (n,), generator=g)
    for i in range(n):
        r, c = int(rows[i]), int(cols[i])
        images[i, 0, r - 3 : r + 3, 4:24] = 1.0
        images[i, 0, 4:24, c - 2 : c + 2] = 0.8
    labels = (rows > 14).long()
    return images, labels


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    """Reconstruction + KL divergence losses summed over all elements and batch."""
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def main(argv=None):
    parser = argparse.ArgumentParser(description="VAE Example")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=512)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=4)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images, labels = synthetic_digits(args.samples)
    train_loader = DataLoader(
        TensorDataset(images, labels), batch_size=args.batch_size, shuffle=True
    )
    test_images, test_labels = synthetic_digits(128, seed=1)
    test_loader = DataLoader(TensorDataset(test_images, test_labels), batch_size=args.batch_size)
    model = VAE().to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)

    def train(epoch):
        model.train()
        train_loss = 0
        for _batch_idx, (data, _) in enumerate(train_loader):
            data = data.to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        average = train_loss / len(train_loader.dataset)
        print(f"====> Epoch: {epoch} Average loss: {average:.4f}")
        return average

    def test(epoch):
        model.eval()
        test_loss = 0
        with torch.no_grad():
            for i, (data, _) in enumerate(test_loader):
                data = data.to(device)
                recon_batch, mu, logvar = model(data)
                test_loss += loss_function(recon_batch, data, mu, logvar).item()
                if i == 0:
                    n = min(data.size(0), 8)
                    comparison = torch.cat(
                        [data[:n], recon_batch.view(args.batch_size, 1, 28, 28)[:n]]
                    )
                    assert comparison.shape == (2 * n, 1, 28, 28)
        test_loss /= len(test_loader.dataset)
        print(f"====> Test set loss: {test_loss:.4f}")
        return test_loss

    history = []
    for epoch in range(1, args.epochs + 1):
        history.append((train(epoch), test(epoch)))
        with torch.no_grad():
            sample = torch.randn(64, 20).to(device)
            sample = model.decode(sample).cpu()
            assert sample.view(64, 1, 28, 28).shape == (64, 1, 28, 28)
    return history


if __name__ == "__main__":
    main()
