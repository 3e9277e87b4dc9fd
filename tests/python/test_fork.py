"""fork(): children (DataLoader workers with the fork start method) have telemetry off and may
set up again."""

import os

import pytest

import nemo.lens as lens
from conftest import Exported


def test_dataloader_fork_worker_has_telemetry_off(telemetry):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, Dataset

    class Probe(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, index):
            with lens.managed_span("step", f"worker.{index}") as span:
                return torch.tensor([span is None, lens.get_telemetry() is None,
                                     os.getpid()])

    handle, exported = telemetry
    with lens.managed_span("step", "parent_loop"):
        loader = DataLoader(Probe(), batch_size=None, num_workers=1,
                            multiprocessing_context="fork")
        batches = [batch.tolist() for batch in loader]
    assert [b[:2] for b in batches] == [[1, 1], [1, 1]]
    assert all(b[2] != os.getpid() for b in batches)
    handle.shutdown(5000)
    assert [s["name"] for s in exported.spans()] == ["parent_loop"]


def test_a_forked_child_may_set_up_again(telemetry, tmp_path):
    handle, exported = telemetry
    child_dir = tmp_path / "child"
    child_dir.mkdir()
    with lens.managed_span("step", "around_fork"):
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.environ["NEMO_LENS_FILE_PATH"] = str(child_dir) + "/"
                child = lens.setup_telemetry(lens.NemoLensConfig.from_env(), rank=0,
                                             world_size=1)
                with lens.managed_span("step", "in_child"):
                    pass
                exporting = child.is_exporting
                child.shutdown(5000)
                code = 0 if exporting is True else 2
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    handle.shutdown(5000)
    assert [s["name"] for s in exported.spans()] == ["around_fork"]
    child_spans = Exported(str(child_dir))
    assert [s["name"] for s in child_spans.spans()] == ["in_child"]
    assert child_spans.resources()[0]["process.pid"] == pid
