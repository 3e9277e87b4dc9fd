"""The training loop behind run_simple_mcore_train_loop.py and pretrain_gpt.py: the Python
counterpart of megatron/examples/simple_train_loop.cpp, traced with lens.

A small GPT (PyTorch, CPU) learns generated token sequences (each counts up from a random start
by a random stride, so the loss falls), with microbatches, data parallelism (gradients averaged
with an all-reduce over Gloo) and evaluation. Every span of the C++ trainer is emitted at the
same place with the same name, group and attributes (nemo.lens.megatron's catalogue):

    megatron.pretrain                      job
      megatron.model_init                  model_init
      megatron.train                       job
        megatron.first_iteration           first_iteration (the first iteration only)
        megatron.evaluate                  evaluate
          megatron.evaluate.step           evaluate
    megatron.train_step                    step: the root of its own trace, one per iteration,
      megatron.forward_backward              the same trace id on every rank, linked to
        megatron.microbatch.forward          megatron.train
          megatron.data.next_batch         data_loading
          megatron.layer.forward           layer
            megatron.layer.self_attention
            megatron.layer.mlp
        megatron.microbatch.backward       microbatch
      megatron.grad_sync.start / .finish   communication
      megatron.optimizer_step              optimizer

so `lens run` and `lens report` read its telemetry as the C++ trainer's. Telemetry is configured
by MEGATRON_OTEL_* (NEMO_LENS_* as fallback) and OTEL_*; the --otel-* flags override them.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
import time
from typing import Callable, List, Optional

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from nemo import lens
import nemo.lens.megatron as lm

VOCAB_SIZE = 64
A = lm.attributes
log = logging.getLogger("megatron.training")
log.setLevel(logging.INFO)  # the iteration lines are INFO records (bridged when logs are on)


# ---- arguments -----------------------------------------------------------------------------------

def integer_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= low, else an error naming the text and what is accepted."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(
                f"'{text}' is not valid; accepted: an integer >= {low}")
        return value
    return parse


positive = integer_at_least(1)
non_negative = integer_at_least(0)


def learning_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value <= 0.0:
        raise argparse.ArgumentTypeError(f"'{text}' is not valid; accepted: a finite number > 0")
    return value


def parser(program: str) -> argparse.ArgumentParser:
    """Megatron's flags that the example implements (defaults: a run of a few seconds on two CPU
    cores) and the three --otel-* flags."""
    p = argparse.ArgumentParser(
        prog=program, description="Trains a small GPT on generated tokens, traced with lens.")

    def count(flag: str, default: int, text: str,
              kind: Callable[[str], int] = positive) -> None:
        """A count flag N whose help ends with its default."""
        p.add_argument(flag, type=kind, metavar="N", default=default,
                       help=f"{text} (default {default})")

    count("--tensor-model-parallel-size", 1, "tensor-parallel size; this example implements 1")
    count("--pipeline-model-parallel-size", 1, "pipeline stages; this example implements 1")
    count("--micro-batch-size", 1, "sequences per micro-batch")
    p.add_argument("--global-batch-size", type=positive, metavar="N", default=None,
                   help="sequences per step over all data-parallel ranks (default micro-batch "
                        "size x data-parallel size)")
    count("--seq-length", 32, "tokens per sequence")
    count("--num-layers", 2, "transformer layers")
    count("--hidden-size", 64, "hidden size")
    count("--num-attention-heads", 4, "attention heads; must divide the hidden size")
    count("--train-iters", 20, "training iterations")
    count("--eval-interval", 10, "evaluate every N iterations")
    count("--eval-iters", 2, "iterations per evaluation; 0 = none", kind=non_negative)
    count("--log-interval", 5, "log and record training metrics every N iterations")
    p.add_argument("--ckpt-format", default="torch", metavar="FORMAT",
                   choices=["torch", "torch_dist", "torch_dcp", "zarr", "fsdp_dtensor"],
                   help="torch, torch_dist, torch_dcp, zarr or fsdp_dtensor, reported as "
                        "megatron.ckpt_format (default torch)")
    precision = p.add_mutually_exclusive_group()
    precision.add_argument("--fp16", action="store_true",
                           help="report megatron.precision fp16 (the CPU example computes in fp32)")
    precision.add_argument("--bf16", action="store_true",
                           help="report megatron.precision bf16 (the CPU example computes in fp32)")
    p.add_argument("--lr", type=learning_rate, metavar="RATE", default=1e-3,
                   help="learning rate, > 0 (default 0.001)")
    lm.add_otel_args(p)
    return p


def parse_args(program: str, argv: Optional[List[str]], rank: int, world_size: int,
               local_rank: int) -> argparse.Namespace:
    """The arguments with Megatron's derived fields (rank, world_size, local_rank,
    data_parallel_size, global_batch_size, num_microbatches); errors exit 2 naming the flag."""
    p = parser(program)
    args = p.parse_args(argv)
    if args.tensor_model_parallel_size != 1 or args.pipeline_model_parallel_size != 1:
        p.error("--tensor-model-parallel-size and --pipeline-model-parallel-size are not "
                "implemented by this example; accepted: 1 (data parallelism is)")
    if args.hidden_size % args.num_attention_heads != 0:
        p.error(f"--hidden-size {args.hidden_size} is not a multiple of --num-attention-heads "
                f"{args.num_attention_heads}; accepted: a hidden size divisible by the number "
                f"of heads")
    args.rank, args.world_size, args.local_rank = rank, world_size, local_rank
    args.data_parallel_size = world_size
    # The rank's parallel coordinates (resource attributes: lens report blames a slow node,
    # pipeline stage or parallel group by them). Data parallel only: the DP rank is the rank.
    args.data_parallel_rank = rank
    args.tensor_model_parallel_rank = 0
    args.pipeline_model_parallel_rank = 0
    per_step = args.micro_batch_size * args.data_parallel_size
    if args.global_batch_size is None:
        args.global_batch_size = per_step
    if args.global_batch_size % per_step != 0:
        p.error(f"--global-batch-size {args.global_batch_size} is not a multiple of "
                f"--micro-batch-size {args.micro_batch_size} x data-parallel size "
                f"{args.data_parallel_size}; accepted: a multiple of {per_step}")
    args.num_microbatches = args.global_batch_size // per_step
    return args


# ---- data and model ------------------------------------------------------------------------------

def make_batch(dp_rank: int, iteration: int, microbatch: int, evaluation: bool, rows: int,
               seq_length: int) -> torch.Tensor:
    """Microbatch `microbatch` of `iteration` for data-parallel rank `dp_rank`: tokens
    [rows, seq_length + 1]; evaluation draws from a disjoint stream."""
    generator = torch.Generator().manual_seed(
        ((dp_rank * 1_000_003 + iteration) * 1009 + microbatch) * 2 + int(evaluation))
    start = torch.randint(0, VOCAB_SIZE, (rows, 1), generator=generator)
    stride = torch.randint(1, 4, (rows, 1), generator=generator)
    return (start + stride * torch.arange(seq_length + 1)) % VOCAB_SIZE


class Layer(nn.Module):
    """A pre-norm transformer layer whose forward is megatron.layer.forward with its attention
    and MLP spans."""

    def __init__(self, hidden: int, heads: int, number: int) -> None:
        super().__init__()
        self.number = number
        self.attention_norm = nn.LayerNorm(hidden)
        self.attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.mlp_norm = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                 nn.Linear(4 * hidden, hidden))

    def forward(self, x: torch.Tensor, causal_mask: torch.Tensor) -> torch.Tensor:
        with lens.managed_span(lm.LAYER_FORWARD.group, lm.LAYER_FORWARD.name,
                               **{A.LAYER_NUMBER: self.number}):
            with lens.managed_span(lm.LAYER_SELF_ATTENTION.group, lm.LAYER_SELF_ATTENTION.name):
                h = self.attention_norm(x)
                attended, _ = self.attention(h, h, h, attn_mask=causal_mask, need_weights=False)
                x = x + attended
            with lens.managed_span(lm.LAYER_MLP.group, lm.LAYER_MLP.name):
                x = x + self.mlp(self.mlp_norm(x))
        return x


class Gpt(nn.Module):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB_SIZE, args.hidden_size)
        self.position = nn.Embedding(args.seq_length, args.hidden_size)
        self.layers = nn.ModuleList(Layer(args.hidden_size, args.num_attention_heads, n + 1)
                                    for n in range(args.num_layers))
        self.norm = nn.LayerNorm(args.hidden_size)
        self.head = nn.Linear(args.hidden_size, VOCAB_SIZE)
        self.register_buffer("causal_mask", torch.triu(
            torch.full((args.seq_length, args.seq_length), float("-inf")), diagonal=1))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1])
        x = self.embedding(tokens) + self.position(positions)
        for layer in self.layers:
            x = layer(x, self.causal_mask)
        return self.head(self.norm(x))


# ---- training ------------------------------------------------------------------------------------

def all_reduce_sum(value: float) -> float:
    if not dist.is_initialized():
        return value
    tensor = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(tensor)
    return tensor.item()


@lens.trace_fn(lm.MICROBATCH_BACKWARD.group, lm.MICROBATCH_BACKWARD.name)
def backward(loss: torch.Tensor) -> None:
    loss.backward()


class Trainer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        torch.manual_seed(1234)  # the same initial weights on every replica
        self.model = Gpt(args)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.lr)

    def loss_of(self, batch: torch.Tensor) -> torch.Tensor:
        logits = self.model(batch[:, :-1])
        return F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), batch[:, 1:].reshape(-1))

    def forward_backward(self, iteration: int) -> float:
        """All microbatches' forwards, then their backwards; this rank's mean loss."""
        args = self.args
        n = args.num_microbatches
        losses = []
        loss_sum = 0.0
        with lens.managed_span(lm.FORWARD_BACKWARD.group, lm.FORWARD_BACKWARD.name,
                               **{A.NUM_MICROBATCHES: n}):
            for m in range(n):
                with lens.managed_span(lm.MICROBATCH_FORWARD.group, lm.MICROBATCH_FORWARD.name,
                                       **{A.MICROBATCH_ID: m}):
                    with lens.managed_span(lm.DATA_NEXT_BATCH.group, lm.DATA_NEXT_BATCH.name):
                        batch = make_batch(args.rank, iteration, m, False,
                                           args.micro_batch_size, args.seq_length)
                    loss = self.loss_of(batch) / n
                    loss_sum += loss.item()
                losses.append(loss)
            for m in reversed(range(n)):
                backward(losses[m])
        return loss_sum

    def sync_gradients(self) -> None:
        """Averages the gradients over the data-parallel replicas."""
        if not dist.is_initialized() or self.args.data_parallel_size == 1:
            return
        grads = [p.grad for p in self.model.parameters() if p.grad is not None]
        with lens.managed_span(lm.GRAD_SYNC_START.group, lm.GRAD_SYNC_START.name):
            flat = torch.cat([g.reshape(-1) for g in grads])
            work = dist.all_reduce(flat, async_op=True)
        with lens.managed_span(lm.GRAD_SYNC_FINISH.group, lm.GRAD_SYNC_FINISH.name):
            work.wait()
        flat.div_(self.args.data_parallel_size)
        offset = 0
        for g in grads:
            g.copy_(flat[offset:offset + g.numel()].view_as(g))
            offset += g.numel()

    def optimizer_step(self) -> float:
        """The global gradient norm, clipped to 1.0; then the optimizer step."""
        with torch.no_grad():
            squares = sum(float(p.grad.pow(2).sum()) for p in self.model.parameters()
                          if p.grad is not None)
            grad_norm = math.sqrt(squares)
            with lens.managed_span(lm.OPTIMIZER_STEP.group, lm.OPTIMIZER_STEP.name,
                                   **{A.UPDATE_SUCCESSFUL: True, A.GRAD_NORM: grad_norm}):
                if grad_norm > 1.0:
                    for p in self.model.parameters():
                        if p.grad is not None:
                            p.grad.mul_(1.0 / grad_norm)
                self.optimizer.step()
                self.optimizer.zero_grad()
        return grad_norm

    def evaluate(self, iteration: int) -> float:
        args = self.args
        loss_sum = 0.0
        with lens.managed_span(lm.EVALUATE.group, lm.EVALUATE.name,
                               **{A.EVAL_ITERS: args.eval_iters}), torch.no_grad():
            for e in range(args.eval_iters):
                with lens.managed_span(lm.EVALUATE_STEP.group, lm.EVALUATE_STEP.name,
                                       **{A.EVAL_ITERATION: e}):
                    batch = make_batch(args.rank, iteration, e, True, args.micro_batch_size,
                                       args.seq_length)
                    loss_sum += self.loss_of(batch).item()
            return all_reduce_sum(loss_sum) / args.data_parallel_size / args.eval_iters


def train(args: argparse.Namespace) -> float:
    """The whole run on this rank; the last iteration's loss."""
    job_enabled = lens.is_span_group_enabled(lm.PRETRAIN.group)
    with lens.managed_span(lm.PRETRAIN.group, lm.PRETRAIN.name,
                           **{A.MODEL_TYPE: "gpt", A.TRAIN_ITERS: args.train_iters,
                              A.GLOBAL_BATCH_SIZE: args.global_batch_size}):
        with lens.managed_span(lm.MODEL_INIT.group, lm.MODEL_INIT.name):
            trainer = Trainer(args)
        with lens.managed_span(lm.TRAIN.group, lm.TRAIN.name, **{A.TRAIN_ITERS: args.train_iters}):
            # Each iteration is a trace of its own, the same trace on every rank (a collective:
            # every rank calls it), linked to megatron.train.
            train_link: Optional[dict] = None
            if job_enabled:
                train_link = {}
                lens.inject_context(train_link)
            step_traces = lens.share_trace_seed(0)
            return train_loop(args, trainer, step_traces, train_link)


def train_loop(args: argparse.Namespace, trainer: Trainer, step_traces: lens.TraceSeed,
               train_link: Optional[dict]) -> float:
    loss = 0.0
    interval_loss = 0.0
    interval_iterations = 0
    interval_start = time.perf_counter()
    for iteration in range(1, args.train_iters + 1):
        first = (lens.managed_span(lm.FIRST_ITERATION.group, lm.FIRST_ITERATION.name,
                                   **{A.ITERATION: iteration})
                 if iteration == 1 else contextlib.nullcontext())
        with first, lens.trace_root_span(lm.TRAIN_STEP.group, lm.TRAIN_STEP.name,
                                         step_traces.trace_id_for(iteration), train_link,
                                         **{A.ITERATION: iteration}) as step:
            local_loss = trainer.forward_backward(iteration)
            trainer.sync_gradients()
            grad_norm = trainer.optimizer_step()
            loss = all_reduce_sum(local_loss) / args.data_parallel_size
            if step is not None:
                step.set_attribute(A.LOSS, loss)
                step.set_attribute(A.GRAD_NORM, grad_norm)
                step.set_attribute(A.LEARNING_RATE, args.lr)
            interval_loss += loss
            interval_iterations += 1
            if iteration % args.log_interval == 0 or iteration == 1:
                now = time.perf_counter()
                ms_per_iteration = (now - interval_start) * 1000.0 / interval_iterations
                tokens_per_sec = (args.global_batch_size * args.seq_length * 1000.0
                                  / max(ms_per_iteration, 1e-9))
                # The megatron.training.* instruments (docs/megatron.md, "Training metrics"), on
                # every rank (a non-exporting rank records nothing).
                lm.record_training_metrics(step_duration_ms=ms_per_iteration,
                                           loss=interval_loss / interval_iterations,
                                           tokens_per_sec=tokens_per_sec, grad_norm=grad_norm,
                                           learning_rate=args.lr)
                interval_start, interval_loss, interval_iterations = now, 0.0, 0
                if args.rank == 0:
                    line = (f" iteration {iteration:8d}/{args.train_iters:8d} | lm loss: "
                            f"{loss:.6E} | grad norm: {grad_norm:.3f} | elapsed time per "
                            f"iteration (ms): {ms_per_iteration:.1f} | tokens/s: "
                            f"{tokens_per_sec:.0f}")
                    print(line, flush=True)
                    log.info(line)  # a log record of this step (MEGATRON_OTEL_LOGS_ENABLED=1)
        lens.note_step_completed()  # the step the hang watchdog watches (HANG_TIMEOUT)
        if args.eval_iters > 0 and iteration % args.eval_interval == 0:
            eval_loss = trainer.evaluate(iteration)
            if args.rank == 0:
                print(f" validation loss at iteration {iteration} | lm loss: {eval_loss:.6E}",
                      flush=True)
    if args.rank == 0:
        print(f"training done: {args.train_iters} iterations, final lm loss {loss:.6E}",
              flush=True)
    return loss


def main(program: str, distributed: bool, argv: Optional[List[str]] = None) -> int:
    """Runs the example; its exit status. With `distributed`, a job of WORLD_SIZE > 1 processes
    (torchrun, `lens run`) meets over Gloo at MASTER_ADDR:MASTER_PORT."""
    world_size = int(os.environ.get("WORLD_SIZE", "1")) if distributed else 1
    rank = int(os.environ.get("RANK", "0")) if distributed else 0
    local_rank = int(os.environ.get("LOCAL_RANK", "0")) if distributed else 0
    args = parse_args(program, argv, rank, world_size, local_rank)
    torch.set_num_threads(1)  # ranks share the machine's cores
    if world_size > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        handle = lm.set_telemetry(args)
    except ValueError as error:
        print(f"{program}: {error}", file=sys.stderr)
        return 2
    train(args)
    if dist.is_initialized():
        dist.barrier()
    handle.shutdown(5000)
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0
