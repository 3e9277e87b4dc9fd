"""`lens collect` in a child process for the Python tests: started on a free loopback port of one
protocol (the other off), its stderr in a file, stopped with SIGTERM. Imports nothing of lens, so
that the wheel test can use it beside an installed wheel."""

import re
import subprocess


class LensCollect:
    """`lens collect` receiving `protocol` ("grpc" or "http") on 127.0.0.1, writing into `out`;
    `address` is the HOST:PORT it listens on."""

    def __init__(self, lens_cli, protocol, out, err_path, *extra):
        self.out = out
        self.err_path = err_path
        ports = {"grpc": "off", "http": "off"}
        ports[protocol] = "127.0.0.1:0"
        with open(self.err_path, "w") as err:
            self.process = subprocess.Popen(
                [lens_cli, "collect", "--grpc", ports["grpc"], "--http", ports["http"],
                 "--out", self.out, *extra], stdout=subprocess.PIPE, stderr=err, text=True)
        line = self.process.stdout.readline()  # "lens collect: listening grpc=... http=..."
        found = re.search(rf" {protocol}=(\S+)", line)
        if not found:
            self.stop()
            raise AssertionError(f"lens collect did not start: {line!r} {self.err()}")
        self.address = found.group(1)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        status = self.process.wait(timeout=10)
        self.process.stdout.close()
        return status

    def err(self):
        with open(self.err_path) as f:
            return f.read()
