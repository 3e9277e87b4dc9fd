"""The hang watchdog from Python: nemo.lens.note_step_completed() marks the steps; a Python span left
open past HANG_TIMEOUT is reported with its stack while it is open, then the resumption."""

import time

import nemo.lens as lens
from conftest import Exported, attributes, clear_telemetry_variables


def hang_records(exported):
    """The watchdog's log records (lens.hang and lens.hang.resumed) in export order."""
    return [r for r in exported.logs() if "lens.hang.stalled_s" in attributes(r)]


def test_a_python_step_stuck_past_the_timeout_is_reported_then_resumed(monkeypatch, tmp_path):
    clear_telemetry_variables(monkeypatch)
    for name, value in {"NEMO_LENS_ENABLED": "1", "NEMO_LENS_EXPORTER": "file",
                        "NEMO_LENS_FILE_PATH": str(tmp_path) + "/",
                        "NEMO_LENS_SPAN_GROUPS": "all", "NEMO_LENS_EXPORT_STRATEGY": "all_ranks",
                        "NEMO_LENS_LOGS_ENABLED": "1", "NEMO_LENS_METRICS_ENABLED": "0",
                        "NEMO_LENS_HANG_TIMEOUT": "0.3", "OTEL_BLRP_SCHEDULE_DELAY": "50"}.items():
        monkeypatch.setenv(name, value)
    handle = lens.setup_telemetry(lens.NemoLensConfig.from_env(), rank=0, world_size=1,
                                  _allow_reinit=True)
    assert handle.is_exporting is True
    exported = Exported(str(tmp_path))
    lens.note_step_completed()  # the first step starts the watchdog
    with lens.managed_span("step", "py.step"):
        with lens.managed_span("forward_backward", "py.forward"):
            # time.sleep releases the GIL: the watchdog and the exporter run meanwhile. The
            # report is written while the span is still open.
            deadline = time.monotonic() + 10
            while not hang_records(exported):
                assert time.monotonic() < deadline, "no lens.hang record within 10 s"
                time.sleep(0.05)
    lens.note_step_completed()
    time.sleep(0.3)  # the watchdog sees the step
    handle.shutdown(5000)

    records = hang_records(exported)
    hang = attributes(records[0])
    assert hang["lens.hang.span"] == "py.forward"
    assert hang["lens.hang.stack"] == ["py.step", "py.forward"]
    assert hang["lens.hang.report"] == 1
    assert hang["lens.hang.timeout_s"] == 0.3
    assert records[0]["body"]["stringValue"].startswith("no step finished for ")
    resumed = attributes(records[-1])
    assert "lens.hang.reports" in resumed
    assert records[-1]["body"]["stringValue"].startswith("progress resumed: a step finished after ")
