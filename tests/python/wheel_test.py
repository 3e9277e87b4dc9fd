"""The nemo.lens wheel end to end (ctest python.wheel): `pip wheel --no-build-isolation` of the
source tree, the wheel's contents, its install into a fresh `python3 -m venv
--system-site-packages`, and wheel_smoke.py run there from outside the source tree, exporting one
span over OTLP/HTTP to a `lens collect` on loopback; the span and its service.name are read back
from the collector's traces.jsonl.

usage: wheel_test.py SOURCE_DIR BUILD_DIR VERSION LENS_CLI
  BUILD_DIR: scikit-build-core's CMake build directory (kept between runs: a rerun is incremental).
"""

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

from lens_collect import LensCollect

SERVICE_NAME = "lens-wheel-smoke"
# Bounds of the steps after the build (the build itself is bounded by the ctest TIMEOUT).
STEP_TIMEOUT_S = 120


def run(command, log, **kwargs):
    """Runs command with stdout and stderr into the file log; on failure, fails with its tail."""
    with open(log, "w") as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, text=True, **kwargs)
    if result.returncode != 0:
        with open(log) as f:
            tail = f.read()[-6000:]
        raise AssertionError(f"{' '.join(command)} exited with {result.returncode}:\n{tail}")


def environment(**extra):
    """The test's environment without Python, telemetry or launcher variables, plus extra."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PYTHON", "NEMO_LENS_", "MEGATRON_OTEL_", "OTEL_", "SLURM_",
                                   "TORCHELASTIC_", "OMPI_", "PMIX_", "PIP_", "SKBUILD_"))
           and name not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "VIRTUAL_ENV",
                            "GLIBC_TUNABLES")}
    env.update(extra)
    return env


def elf_runpath(path):
    """The DT_RUNPATH (or DT_RPATH) of an ELF file, by readelf; None when it has none."""
    output = subprocess.run(["readelf", "-d", path], check=True, stdout=subprocess.PIPE,
                            text=True).stdout
    found = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]", output)
    return found.group(1) if found else None


def check_wheel(wheel, version, unpacked, source_dir):
    """The wheel holds the package, the module and the two libraries, and nothing of an install
    prefix (headers, CMake files, programs); the RPATHs are $ORIGIN-relative."""
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        z.extractall(unpacked)
    package = [n for n in names if not n.startswith(f"nemo_lens-{version}.dist-info/")]
    modules = [n for n in package if re.fullmatch(r"nemo/lens/_lens\.cpython-[^/]+\.so", n)]
    assert len(modules) == 1, f"one nemo/lens/_lens.cpython-*.so expected: {package}"
    for required in ("nemo/lens/__init__.py", "nemo/lens/_libs/liblens.so",
                     "nemo/lens/_libs/liblens_megatron.so"):
        assert required in package, f"{required} missing from the wheel: {package}"
    assert "nemo/__init__.py" not in package, "nemo must stay a namespace package"
    outside = [n for n in package if not n.startswith("nemo/lens/")]
    assert not outside, f"files outside nemo/lens/ in the wheel: {outside}"
    # Every .py of the source package is in the wheel.
    source = os.path.join(source_dir, "python")
    for root, _, files in os.walk(os.path.join(source, "nemo")):
        for name in files:
            if name.endswith((".py", ".pyi", ".typed")):
                relative = os.path.relpath(os.path.join(root, name), source)
                assert relative in package, f"{relative} missing from the wheel"
    assert elf_runpath(os.path.join(unpacked, modules[0])) == "$ORIGIN/_libs"
    assert elf_runpath(os.path.join(unpacked, "nemo/lens/_libs/liblens_megatron.so")) == "$ORIGIN"
    return modules[0]


class Collector(LensCollect):
    """`lens collect` with OTLP/HTTP only, on a free loopback port, writing into directory."""

    def __init__(self, lens_cli, directory):
        super().__init__(lens_cli, "http", directory, directory + ".err")
        self.http = self.address


def attributes(item):
    """An OTLP JSON attribute list as a dict of its string/int/bool/double values."""
    return {a["key"]: next(iter(a["value"].values())) for a in item.get("attributes", [])}


def collected_spans(directory):
    """[(resource attributes, span)] of traces.jsonl."""
    path = os.path.join(directory, "traces.jsonl")
    assert os.path.exists(path), f"the collector received no traces (no {path})"
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return [(attributes(rs["resource"]), span) for line in lines for rs in line["resourceSpans"]
            for scope in rs["scopeSpans"] for span in scope["spans"]]


def main(source_dir, build_dir, version, lens_cli):
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="lens-wheel-") as tmp:
        # 1. The wheel, as a user builds it (the build directory is kept for incremental reruns).
        wheels = os.path.join(tmp, "wheels")
        started, children = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        run([python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
             "--disable-pip-version-check", "--no-cache-dir", "--wheel-dir", wheels, source_dir],
            os.path.join(tmp, "pip-wheel.log"),
            env=environment(SKBUILD_BUILD_DIR=build_dir), cwd=tmp)
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        # What the build cost (CI's figure when the build directory was empty and no ccache ran).
        print(f"python.wheel: pip wheel took {time.monotonic() - started:.0f} s, "
              f"{used.ru_utime - children.ru_utime + used.ru_stime - children.ru_stime:.0f} "
              "CPU-seconds")
        built = os.listdir(wheels)
        assert len(built) == 1 and re.fullmatch(
            rf"nemo_lens-{re.escape(version)}-cp\d+-cp\d+\w*-linux_\w+\.whl", built[0]), \
            f"one nemo_lens-{version}-*.whl expected in {wheels}: {built}"
        wheel = os.path.join(wheels, built[0])
        module = check_wheel(wheel, version, os.path.join(tmp, "unpacked"), source_dir)

        # 2. A fresh venv that sees the system's packages, and the wheel installed into it.
        venv = os.path.join(tmp, "venv")
        run([python, "-m", "venv", "--system-site-packages", venv], os.path.join(tmp, "venv.log"),
            env=environment(), timeout=STEP_TIMEOUT_S)
        venv_python = os.path.join(venv, "bin", "python")
        run([venv_python, "-m", "pip", "install", "--no-deps", "--no-index",
             "--disable-pip-version-check", "--no-cache-dir", wheel],
            os.path.join(tmp, "pip-install.log"),
            env=environment(), timeout=STEP_TIMEOUT_S)

        # 3. The smoke script, copied out of the source tree and run from the temporary
        # directory in isolated mode (-I: no PYTHON* variables, no script directory on the path).
        smoke = os.path.join(tmp, "wheel_smoke.py")
        shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "wheel_smoke.py"),
                        smoke)
        collector = Collector(lens_cli, os.path.join(tmp, "collected"))
        try:
            result = subprocess.run(
                [venv_python, "-I", smoke], cwd=tmp, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, timeout=STEP_TIMEOUT_S,
                env=environment(NEMO_LENS_ENABLED="1", NEMO_LENS_EXPORT_STRATEGY="all_ranks",
                                OTEL_SERVICE_NAME=SERVICE_NAME,
                                OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
                                OTEL_EXPORTER_OTLP_ENDPOINT=f"http://{collector.http}"))
        finally:
            status = collector.stop()
        assert result.returncode == 0, f"wheel_smoke.py failed:\n{result.stdout}"
        assert status == 0, f"lens collect exited with {status}: {collector.err()}"

        # The module and both libraries came from the venv's copy of the package.
        report = json.loads(result.stdout.strip().splitlines()[-1])
        package = report["package"]
        assert package.startswith(os.path.realpath(venv) + os.sep), report
        assert report["lens_files"] == sorted([
            os.path.join(package, os.path.basename(module)),
            os.path.join(package, "_libs", "liblens.so"),
            os.path.join(package, "_libs", "liblens_megatron.so")]), report

        spans = collected_spans(collector.out)
        smoke_spans = [(attrs, span) for attrs, span in spans
                       if span["name"] == "wheel.smoke"]
        assert len(smoke_spans) == 1, f"one span wheel.smoke expected: {spans}"
        smoke_resource = smoke_spans[0][0]
        assert smoke_resource.get("service.name") == SERVICE_NAME, smoke_resource
    print(f"python.wheel: {built[0]} installed and exported a span")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
