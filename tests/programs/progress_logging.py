"""A training loop as tutorials write it: a DataLoader wrapped in tqdm with the loss as the
bar's postfix, and TensorBoard logging through SummaryWriter (scalars, a histogram of the
weights, the learning rate). Weights and data come from NumPy, so this program's runs
on both libraries start alike."""

import numpy as np
from tqdm import tqdm

import ember as torch
from ember import nn
from ember.utils.data import DataLoader, TensorDataset
from ember.utils.tensorboard import SummaryWriter


def main(log_dir, progress_file, epochs=3):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 6)).astype(np.float32)
    y = (x @ rng.standard_normal((6, 3)).astype(np.float32)).argmax(1)
    loader = DataLoader(TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=16)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(0.3 * rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    writer = SummaryWriter(log_dir)
    losses, step = [], 0
    for epoch in range(epochs):
        bar = tqdm(loader, desc=f"epoch {epoch}", file=progress_file, mininterval=0, ascii=True)
        for data, target in bar:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(data), target)
            loss.backward()
            optimizer.step()
            bar.set_postfix(loss=loss.item())
            writer.add_scalar("train/loss", loss.item(), step)
            writer.add_scalar("train/loss_tensor", loss, step)  # a 0-d tensor works too
            losses.append(loss.item())
            step += 1
        writer.add_histogram("weights/0", model[0].weight, epoch)
        writer.add_scalar("lr", optimizer.param_groups[0]["lr"], epoch)
    writer.close()
    return losses
