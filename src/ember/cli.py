"""The ``ember`` command: ``ember demo`` trains a digits classifier end to end."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

MODELS = ("mlp", "cnn")
OPTIMIZERS = ("adam", "adamw", "sgd", "rmsprop", "adagrad")


def build_model(kind: str):
    from . import nn

    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 2 * 2, 10),
    )


def build_optimizer(name: str, params, lr: float):
    from . import optim

    if name == "sgd":
        return optim.SGD(params, lr=lr, momentum=0.9)
    return {
        "adam": optim.Adam,
        "adamw": optim.AdamW,
        "rmsprop": optim.RMSprop,
        "adagrad": optim.Adagrad,
    }[name](params, lr=lr)


def _evaluate(model, loader, device) -> tuple[float, float]:
    import ember

    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with ember.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            total_loss += float(ember.nn.functional.cross_entropy(logits, y, reduction="sum"))
            correct += int((logits.argmax(1) == y).sum())
            count += len(y)
    model.train()
    return total_loss / count, correct / count


def _plot(history: dict, path: Path) -> None:
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


def _write_graph(out: Path, loss, model, make_dot, to_svg, to_html, hint: str) -> None:
    """One training step's backward graph: DOT, HTML, and SVG when Graphviz is installed."""
    dot = make_dot(loss, params=dict(model.named_parameters()))
    (out / "graph.dot").write_text(dot)
    (out / "graph.html").write_text(to_html(dot, title=f"ember demo: {type(model).__name__}"))
    svg = to_svg(dot)
    if svg is not None:
        (out / "graph.svg").write_text(svg)
    else:
        print(hint)


def demo(args) -> int:
    import ember
    from ember.utils.data import DataLoader

    from .datasets import digits_dataset
    from .viz import INSTALL_HINT, make_dot, to_html, to_svg, track_modules

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ember.manual_seed(args.seed)
    device = ember.device(args.device)
    train_set, test_set = digits_dataset("train"), digits_dataset("test")
    loader = DataLoader(
        train_set,
        batch_size=args.batch_size,
        shuffle=True,
        generator=ember.Generator().manual_seed(args.seed),
    )
    test_loader = DataLoader(test_set, batch_size=512)
    model = build_model(args.model).to(device)
    optimizer = build_optimizer(args.optimizer, model.parameters(), args.lr)
    loss_fn = ember.nn.CrossEntropyLoss()
    history = {"train_loss": [], "train_acc": [], "test_loss": [], "test_acc": []}
    print(
        f"ember demo: {args.model} on the 8x8 digits ({len(train_set)} train / "
        f"{len(test_set)} held out), {args.optimizer} lr={args.lr}, device={device}"
    )
    graph_written = False
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        bar = _progress(loader, f"epoch {epoch}/{args.epochs}", args.no_progress)
        seen, loss_sum, correct = 0, 0.0, 0
        for x, y in bar:
            x, y = x.to(device), y.to(device)
            first = not graph_written
            with track_modules(model) if first else contextlib.nullcontext():
                logits = model(x)
                loss = loss_fn(logits, y)
            optimizer.zero_grad()
            # the first step keeps its graph a moment, to be drawn with its gradients
            loss.backward(retain_graph=first)
            if first:
                _write_graph(out, loss, model, make_dot, to_svg, to_html, INSTALL_HINT)
                graph_written = True
            optimizer.step()
            n = len(y)
            seen += n
            loss_sum += float(loss) * n
            correct += int((logits.argmax(1) == y).sum())
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{loss_sum / seen:.4f}", acc=f"{correct / seen:.3f}")
        test_loss, test_acc = _evaluate(model, test_loader, device)
        history["train_loss"].append(loss_sum / seen)
        history["train_acc"].append(correct / seen)
        history["test_loss"].append(test_loss)
        history["test_acc"].append(test_acc)
        if args.no_progress:
            print(
                f"epoch {epoch}: loss {loss_sum / seen:.4f}, train acc {correct / seen:.3f}, "
                f"held-out acc {test_acc:.3f}"
            )
    elapsed = time.perf_counter() - start
    ember.save(
        model.state_dict(),
        out / "model.safetensors",
        metadata={"model": args.model, "epochs": args.epochs, "seed": args.seed},
    )
    _plot(history, out / "curves.png")
    metrics = {
        "model": args.model,
        "held_out_accuracy": history["test_acc"][-1],
        "held_out_loss": history["test_loss"][-1],
        "epochs": args.epochs,
        "seconds": round(elapsed, 2),
        "history": history,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    print(
        f"held-out accuracy: {history['test_acc'][-1]:.2%} after {args.epochs} epochs "
        f"({elapsed:.1f} s)"
    )
    print(
        f"wrote {out / 'model.safetensors'}, {out / 'curves.png'}, {out / 'graph.dot'}, "
        f"{out / 'graph.html'}"
        + (f", {out / 'graph.svg'}" if (out / "graph.svg").exists() else "")
        + f", {out / 'metrics.json'}"
    )
    return 0


def _progress(iterable, desc: str, disabled: bool):
    if disabled:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, leave=False, dynamic_ncols=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ember",
        description="ember: tensors with reverse-mode autodiff and the PyTorch API.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser(
        "demo",
        help="train a digits classifier (shipped dataset, no download)",
        description="Train a classifier on the 8x8 handwritten digits shipped with ember: a "
        "progress bar with running loss and accuracy, held-out accuracy, and in --out the "
        "checkpoint (model.safetensors), loss/accuracy curves (curves.png), one training "
        "step's backward graph (graph.dot, graph.html, and graph.svg when Graphviz is "
        "installed) and metrics.json.",
    )
    d.add_argument("--model", choices=MODELS, default="mlp", help="mlp (default) or cnn")
    d.add_argument("--epochs", type=int, default=20, help="passes over the data (default 20)")
    d.add_argument("--batch-size", type=int, default=64, help="batch size (default 64)")
    d.add_argument("--lr", type=float, default=3e-3, help="learning rate (default 3e-3)")
    d.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        default="adam",
        help="optimizer (default adam; sgd uses momentum 0.9)",
    )
    d.add_argument("--seed", type=int, default=0, help="random seed: same seed, same run")
    d.add_argument("--out", default="ember-demo", help="output folder (default ./ember-demo)")
    d.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    d.add_argument(
        "--no-progress",
        action="store_true",
        help="print one line per epoch instead of a progress bar",
    )
    d.set_defaults(run=demo)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
