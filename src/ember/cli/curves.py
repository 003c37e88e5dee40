"""The demo's ``curves.png``: loss and accuracy per epoch, train and held out."""

from __future__ import annotations

from pathlib import Path


def plot_curves(history: dict, path: Path) -> None:
    """Draw ``history`` (lists ``train_loss``, ``test_loss``, ``train_acc``, ``test_acc``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = range(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, history["train_loss"], label="train")
    ax_loss.plot(epochs, history["test_loss"], label="held out")
    ax_loss.set(title="cross-entropy loss", xlabel="epoch")
    ax_acc.plot(epochs, history["train_acc"], label="train")
    ax_acc.plot(epochs, history["test_acc"], label="held out")
    ax_acc.set(title="accuracy", xlabel="epoch", ylim=(0, 1))
    for ax in (ax_loss, ax_acc):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
