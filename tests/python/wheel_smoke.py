"""The installed wheel's smoke test, run by wheel_test.py with a fresh venv's python from outside
the source tree: nemo.lens (module and libraries) loads from the venv's site-packages, and one
span exported over OTLP/HTTP reaches the collector that OTEL_EXPORTER_OTLP_ENDPOINT names.
Only names that the original NeMo Lens has too, so the script runs on either."""

import json
import os
import sys
import sysconfig

import nemo.lens
from nemo.lens import NemoLensConfig, setup_telemetry, span_cm


def mapped_files():
    """The paths of the files mapped into this process."""
    with open("/proc/self/maps") as f:
        return {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}


def main():
    site = os.path.realpath(sysconfig.get_paths()["platlib"])
    package = os.path.join(site, "nemo", "lens")
    loaded_from = os.path.dirname(os.path.realpath(nemo.lens.__file__))
    assert loaded_from == package, f"nemo.lens loaded from {loaded_from}, not {package}"

    config = NemoLensConfig.from_env("NEMO_LENS")
    handle = setup_telemetry(config, rank=0, world_size=1)
    with span_cm("wheel.smoke"):
        pass
    handle.shutdown()

    # Every lens file in the process, by its real path (the module and the libraries).
    lens_files = sorted(path for path in map(os.path.realpath, mapped_files())
                        if os.path.basename(path).startswith(("liblens", "_lens")))
    print(json.dumps({"package": loaded_from, "lens_files": lens_files}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
