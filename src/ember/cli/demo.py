"""``ember demo``: train a digits classifier end to end and write what it learned.

Every argument is checked before anything is written; the results go to a staging folder and
are moved into ``--out`` only when the run finishes (``_output_folder.py``). A run that was
stopped (Ctrl-C: exit code 130, SIGTERM: 143) or that diverged (exit code 1) leaves ``--out`` as
it was. Notes about what was skipped (no Graphviz, no onnx) come after the run, on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from ..distributed._rank_output import dropping_mpiexec_banners
from ..distributed.run import signal_event, stop_process_groups
from . import _extras, _output_folder
from ._arguments import UsageError, folder, positive_float, positive_int, seed
from .curves import plot_curves

MODELS = ("mlp", "cnn")
OPTIMIZERS = ("adam", "adamw", "sgd", "rmsprop", "adagrad")
OUTPUT_NAMES = (
    "model.safetensors",
    "model.onnx",
    "curves.png",
    "graph.dot",
    "graph.html",
    "graph.svg",
    "metrics.json",
    "README.txt",
)
EXIT_DIVERGED = 1  # a failed job, as a failed write is
# cross-entropy of a uniform guess over the 10 digits (ln 10 = 2.30): a network that ends at
# twice that does worse than guessing, its weights blown up by too large steps
CHANCE_LOSS = math.log(10)
DIVERGED_LOSS = 2 * CHANCE_LOSS


def build_model(kind: str):
    """The demo's network: ``"mlp"`` or ``"cnn"``, for 8x8 single-channel images, 10 classes.

    Example::
        >>> model = build_model("mlp")
        >>> model.load_state_dict(ember.load("ember-demo/model.safetensors"))
    """
    from .. import nn

    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    if kind != "cnn":
        raise ValueError(f"build_model: unknown model {kind!r}; expected one of {MODELS}")
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
    """The demo's optimizer ``name`` (one of ``OPTIMIZERS``; sgd with momentum 0.9)."""
    from .. import optim

    if name == "sgd":
        return optim.SGD(params, lr=lr, momentum=0.9)
    return {
        "adam": optim.Adam,
        "adamw": optim.AdamW,
        "rmsprop": optim.RMSprop,
        "adagrad": optim.Adagrad,
    }[name](params, lr=lr)


def add_parser(sub) -> None:
    d = sub.add_parser(
        "demo",
        help="train a digits classifier (shipped dataset, no download)",
        description="Train a classifier on the 8x8 handwritten digits shipped with ember: a "
        "line per epoch with loss, train and held-out accuracy (and a progress bar when stderr "
        "is a terminal), then in --out the checkpoint (model.safetensors), loss/accuracy "
        "curves (curves.png), one training step's backward graph (graph.dot, graph.html, and "
        "graph.svg when Graphviz is installed), metrics.json and README.txt (how to load the "
        "model back). The files are written when the run finishes; an interrupted run leaves "
        "--out as it was.",
    )
    d.add_argument("--model", choices=MODELS, default="mlp", help="mlp (default) or cnn")
    d.add_argument(
        "--epochs", type=positive_int, default=20, help="passes over the data (default 20)"
    )
    d.add_argument("--batch-size", type=positive_int, default=64, help="batch size (default 64)")
    d.add_argument("--lr", type=positive_float, default=3e-3, help="learning rate (default 3e-3)")
    d.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        default="adam",
        help="optimizer (default adam; sgd uses momentum 0.9)",
    )
    d.add_argument("--seed", type=seed, default=0, help="random seed: same seed, same run")
    d.add_argument(
        "--out", type=folder, default="ember-demo", help="output folder (default ./ember-demo)"
    )
    d.add_argument(
        "--device", default="cpu", help="cpu (default), or cuda / cuda:N with CuPy and a GPU"
    )
    d.add_argument(
        "--nproc",
        type=positive_int,
        default=1,
        help="train data-parallel on this many processes (DistributedDataParallel over MPI; "
        "--batch-size is the global batch, split between them)",
    )
    d.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar, only the line per epoch (the bar is off anyway when stderr is "
        "not a terminal)",
    )
    d.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    device = _checked_device(args.device)
    if args.nproc > 1:
        _check_data_parallel(args, device)
    out = Path(args.out)
    staging = _output_folder.open_staging(out, OUTPUT_NAMES)
    try:
        with _terminate_as_interrupt():
            if args.nproc > 1:
                result = _train_data_parallel(args, device, staging)
            else:
                result = _train_and_write(args, device, staging)
        if result["diverged"]:
            print(f"ember demo: {result['diverged']}; {out} was left as it was", file=sys.stderr)
            return EXIT_DIVERGED
        _output_folder.publish(staging, out, OUTPUT_NAMES)
    except KeyboardInterrupt:
        signum = _stop_requested[0] or signal.SIGINT
        print(f"ember demo: {signal_event(signum)}; {out} was left as it was", file=sys.stderr)
        return 128 + signum
    except OSError as exc:  # the disk filled up, the folder went away: the machine, not ember
        print(
            f"ember demo: could not write the results to {out}: {exc}",
            file=sys.stderr,
        )
        return 1
    finally:
        _output_folder.discard(staging)
    written = ", ".join(name for name in OUTPUT_NAMES if (out / name).exists())
    print(result["summary"])
    print(f"wrote {out}{'' if str(out).endswith('/') else '/'}: {written}")
    print("load the model back in Python:")
    print(_indent(_load_snippet(args.model, out)))
    sys.stdout.flush()
    for note in result["notes"]:  # after the run, apart from its results
        print(f"ember demo: {note}", file=sys.stderr)
    return 0


# the stop signal's number once one arrived (0 before): the training loop checks it at every
# batch, and run() names the signal and returns 128 + its number
_stop_requested = [0]


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM (``kill``, a job scheduler's time limit) ends the run as Ctrl-C does, so that
    the staging folder is removed rather than left behind. The handler also leaves a flag that
    the training loop checks at every batch: a KeyboardInterrupt raised where Python swallows
    it (inside a finalizer, say) would otherwise let the run go on. Only the first signal
    raises: a second one must not break off the clean-up the first one started."""

    def interrupt(signum, frame):
        if _stop_requested[0]:
            return
        _stop_requested[0] = signum
        raise KeyboardInterrupt

    _stop_requested[0] = 0
    try:
        previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread: signals stay as they are
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _checked_device(name: str):
    import ember

    try:
        device = ember.device(name)
    except (RuntimeError, ValueError):
        raise UsageError(f"--device {name!r} is not a device; use cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        try:
            ember.cuda.init()
        except AssertionError as exc:
            # init's message starts with PyTorch's "Torch not compiled with CUDA enabled: "
            why = str(exc).partition(": ")[2].rstrip(".") or str(exc)
            raise UsageError(
                f"--device {name}: no usable GPU: {why}, or use --device cpu"
            ) from None
        count = ember.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise UsageError(
                f"--device {name}: there are {count} GPU(s), numbered 0 to {count - 1}; "
                "choose one of those"
            )
    return device


def _check_data_parallel(args, device) -> None:
    """``--nproc N`` can run here: on the CPU, a batch to split, and MPI installed."""
    from ..distributed import is_available
    from ..multiprocessing.spawn import _mpiexec

    if device.type != "cpu":
        raise UsageError("--nproc: data-parallel training runs on the CPU (MPI); use --device cpu")
    if args.batch_size < args.nproc:
        raise UsageError(
            f"--nproc {args.nproc}: --batch-size {args.batch_size} must be at least the number "
            "of processes"
        )
    if not is_available():
        missing = "mpi4py is not installed"
    elif _mpiexec() is None:
        missing = "no mpiexec was found (next to this Python or on the PATH)"
    else:
        return
    raise UsageError(
        f"--nproc {args.nproc}: data-parallel training needs the {_extras.DISTRIBUTED} extra "
        f"({missing}): {_extras.install_hint(_extras.DISTRIBUTED)}, or leave out --nproc"
    )


def _train_data_parallel(args, device, staging: Path) -> dict:
    """``--nproc N``: the same training on N processes, each with 1/N of every batch, their
    gradients averaged by DistributedDataParallel; rank 0 writes the results."""
    import ember.multiprocessing as mp

    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one BLAS thread per process: no fighting
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    settings = {k: v for k, v in vars(args).items() if k != "run"}
    # a stopped run's workers die of SIGTERM, and each mpiexec would print a banner saying so
    with dropping_mpiexec_banners():
        workers = mp.spawn(
            _data_parallel_worker, args=(settings, str(staging)), nprocs=args.nproc, join=False
        )
        try:
            while not workers.join():
                pass
        except KeyboardInterrupt:
            stop_process_groups(workers.processes)  # all at once: no worker sees another go
            with contextlib.suppress(Exception):
                workers.join()  # each has failed now: join removes what spawn wrote
            raise
    result_file = staging / ".result.json"
    result = json.loads(result_file.read_text())
    result_file.unlink()
    return result


def _data_parallel_worker(rank: int, settings: dict, staging: str) -> None:
    import ember
    import ember.distributed as dist

    dist.init_process_group("gloo")  # env:// from spawn
    try:
        args = argparse.Namespace(**settings)
        result = _train_and_write(
            args, ember.device("cpu"), Path(staging), world=(rank, args.nproc)
        )
        if rank == 0:
            (Path(staging) / ".result.json").write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()


def _train_and_write(args, device, staging: Path, world: tuple[int, int] | None = None) -> dict:
    """Train and write every result into ``staging``. Returns ``summary`` (the closing line),
    ``notes`` (what was skipped and why) and ``diverged`` (why the run failed, or None: then
    nothing was written). With ``world`` (rank, size) this is one process of a data-parallel
    run: only rank 0 prints and writes."""
    import ember
    from ember.utils.data import DataLoader

    from ..datasets import digits_dataset
    from ..viz import make_dot, to_html, to_svg, track_modules

    ember.manual_seed(args.seed)
    train_set, test_set = digits_dataset("train"), digits_dataset("test")
    rank, size = world if world is not None else (0, 1)
    writer = rank == 0
    sampler = None
    if world is None:
        loader = DataLoader(
            train_set,
            batch_size=args.batch_size,
            shuffle=True,
            generator=ember.Generator().manual_seed(args.seed),
        )
    else:
        from ember.utils.data.distributed import DistributedSampler

        sampler = DistributedSampler(train_set, size, rank, shuffle=True, seed=args.seed)
        loader = DataLoader(train_set, batch_size=args.batch_size // size, sampler=sampler)
    test_loader = DataLoader(test_set, batch_size=512)
    model = build_model(args.model).to(device)
    if world is not None:
        from ember.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model)
    optimizer = build_optimizer(args.optimizer, model.parameters(), args.lr)
    loss_fn = ember.nn.CrossEntropyLoss()
    history = {"train_loss": [], "train_acc": [], "test_loss": [], "test_acc": []}
    if writer:
        across = f", {size} processes" if world is not None else ""
        print(
            f"ember demo: {args.model} on the 8x8 digits ({len(train_set)} train / "
            f"{len(test_set)} held out), {args.optimizer} lr={args.lr}, device={device}{across}"
        )
    show_bar = writer and not args.no_progress and sys.stderr.isatty()
    notes = []
    graph_written = False
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        if sampler is not None:
            sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every rank
        bar = _progress(loader, f"epoch {epoch}/{args.epochs}", show_bar)
        seen, loss_sum, correct = 0, 0.0, 0
        for x, y in bar:
            if _stop_requested[0]:
                raise KeyboardInterrupt
            x, y = x.to(device), y.to(device)
            first = not graph_written
            with track_modules(model) if first else contextlib.nullcontext():
                logits = model(x)
                loss = loss_fn(logits, y)
            optimizer.zero_grad()
            # the first step keeps its graph a moment, to be drawn with its gradients
            loss.backward(retain_graph=first)
            if first:
                if writer:
                    notes += _write_graph(staging, loss, model, make_dot, to_svg, to_html)
                graph_written = True
            optimizer.step()
            n = len(y)
            seen += n
            loss_sum += float(loss) * n
            correct += int((logits.argmax(1) == y).sum())
            if show_bar:
                bar.set_postfix(loss=f"{loss_sum / seen:.4f}", acc=f"{correct / seen:.3f}")
        test_loss, test_acc = _evaluate(model, test_loader, device)
        history["train_loss"].append(loss_sum / seen)
        history["train_acc"].append(correct / seen)
        history["test_loss"].append(test_loss)
        history["test_acc"].append(test_acc)
        # a line per epoch, bar or not: the held-out accuracy is what the run is about, and a
        # log file (stderr not a terminal) gets these lines instead of the bar's redraws
        if writer:
            print(
                f"epoch {epoch}/{args.epochs}: loss {loss_sum / seen:.4f}, "
                f"train acc {correct / seen:.3f}, held-out acc {test_acc:.3f}",
                flush=True,
            )
    elapsed = time.perf_counter() - start
    if world is not None:
        model = model.module  # the trained network, as one process would have it
    result = {"summary": "", "notes": notes, "diverged": _divergence(history, args.lr)}
    if not writer or result["diverged"]:
        return result
    ember.save(
        model.state_dict(),
        staging / "model.safetensors",
        metadata={"model": args.model, "epochs": args.epochs, "seed": args.seed},
    )
    onnx_written = _export_onnx(model, test_set, staging / "model.onnx")
    if not onnx_written:
        notes.append(
            f"model.onnx skipped: install the onnx extra ({_extras.install_hint(_extras.ONNX)})"
        )
    plot_curves(history, staging / "curves.png")
    metrics = {
        "model": args.model,
        "held_out_accuracy": history["test_acc"][-1],
        "held_out_loss": history["test_loss"][-1],
        "epochs": args.epochs,
        "seconds": round(elapsed, 2),
        "history": history,
    }
    (staging / "metrics.json").write_text(json.dumps(metrics, indent=2))
    summary = (
        f"held-out accuracy: {history['test_acc'][-1]:.2%} after {_plural(args.epochs, 'epoch')} "
        f"({elapsed:.1f} s)"
    )
    (staging / "README.txt").write_text(_readme(args, summary, Path(args.out), onnx_written))
    result["summary"] = summary
    return result


def _divergence(history: dict, lr: float) -> str | None:
    """Why the run counts as diverged, or None: the last epoch's loss (train or held out) is
    not a number, or worse than guessing by far (``DIVERGED_LOSS``)."""
    last = {"loss": history["train_loss"][-1], "held-out loss": history["test_loss"][-1]}
    for name, value in last.items():
        if not math.isfinite(value) or value > DIVERGED_LOSS:
            return (
                f"training diverged: the last epoch's {name} is {value:.3g} (guessing gives "
                f"{CHANCE_LOSS:.2f}), held-out accuracy {history['test_acc'][-1]:.1%}; try a "
                f"smaller --lr than {lr:g}"
            )
    return None


def _export_onnx(model, dataset, path: Path) -> bool:
    """``model.onnx`` for ONNX Runtime (dynamic batch), when the onnx package is installed."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return False
    import ember

    model.eval()
    example = dataset[0][0].unsqueeze(0).to(next(model.parameters()).device)
    ember.onnx.export(
        model,
        (example,),
        str(path),
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
    )
    return True


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


def _write_graph(out: Path, loss, model, make_dot, to_svg, to_html) -> list[str]:
    """One training step's backward graph: DOT, HTML, and SVG when Graphviz is installed.
    Returns the notes for the end of the run (why there is no SVG)."""
    dot = make_dot(loss, params=dict(model.named_parameters()))
    (out / "graph.dot").write_text(dot)
    (out / "graph.html").write_text(to_html(dot, title=f"ember demo: {type(model).__name__}"))
    svg = to_svg(dot)
    if svg is not None:
        (out / "graph.svg").write_text(svg)
        return []
    return [
        "graph.svg skipped: Graphviz's `dot` was not found; graph.html draws the graph in a "
        "browser (for graph.svg, install Graphviz: `apt-get install graphviz` on Debian/Ubuntu, "
        "`brew install graphviz` on macOS)"
    ]


def _progress(iterable, desc: str, shown: bool):
    if not shown:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, leave=False, dynamic_ncols=True)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _load_snippet(model: str, out: Path) -> str:
    """Three lines of Python that rebuild the trained model from ``out``."""
    checkpoint = json.dumps(str(out.resolve() / "model.safetensors"))  # a Python string too
    return (
        "import ember.cli\n"
        f"model = ember.cli.build_model({json.dumps(model)})\n"
        f"model.load_state_dict(ember.load({checkpoint}))\n"
    )


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines()).rstrip("\n")


def _onnx_section(out: Path) -> str:
    path = json.dumps(str(out.resolve() / "model.onnx"))
    return f"""Run it in ONNX Runtime (C/C++, C#, Java, JavaScript and mobile read the same file):
    import numpy, onnxruntime
    session = onnxruntime.InferenceSession({path})
    logits = session.run(None, {{"input": numpy.zeros((1, 1, 8, 8), numpy.float32)}})[0]

"""


def _readme(args, summary: str, out: Path, onnx_written: bool = False) -> str:
    onnx_section = _onnx_section(out) if onnx_written else ""
    command = shlex.join(
        ["ember", "demo", "--model", args.model, "--epochs", str(args.epochs)]
        + ["--batch-size", str(args.batch_size), "--lr", str(args.lr)]
        + ["--optimizer", args.optimizer, "--seed", str(args.seed), "--device", args.device]
    )
    return f"""ember demo: {args.model} trained on the 8x8 digits
{summary}
made by: {command}

Files
  model.safetensors  the trained weights (a state_dict; safetensors, no pickle)
  curves.png         loss and accuracy per epoch, train and held out
  graph.dot          one training step's backward graph (graph.html draws it in a browser;
                     graph.svg is there when Graphviz was installed)
  model.onnx         the model for ONNX Runtime (batch size free), when onnx is installed
  metrics.json       the numbers behind curves.png
  README.txt         this file

Load the model back in Python:
{_indent(_load_snippet(args.model, out))}

{onnx_section}Look inside the checkpoint, or compare it with another one (PyTorch's .pt too):
    ember inspect {shlex.quote(str(out.resolve() / "model.safetensors"))}
    ember diff {shlex.quote(str(out.resolve() / "model.safetensors"))} other.pt
"""
