"""liblens loads by dlopen() into a process whose static TLS is already in use (BENCHMARKS.md,
"Issue 22, step 1").

Usage: dlopen_liblens.py PATH_TO_LIBLENS [--torch]
With --torch, torch is imported first (its libraries take most of glibc's static-TLS reserve).
Exits 0 when dlopen succeeds, 1 with the loader's message otherwise. GLIBC_TUNABLES must be unset:
the point is that no tunable is needed.
"""
import ctypes
import os
import sys


def main() -> int:
    if "GLIBC_TUNABLES" in os.environ:
        print("GLIBC_TUNABLES is set; this test checks loading without it", file=sys.stderr)
        return 2
    path = sys.argv[1]
    if "--torch" in sys.argv[2:]:
        import torch  # noqa: F401  (imported for its static TLS use)
    try:
        library = ctypes.CDLL(path)
    except OSError as error:
        print(f"dlopen failed: {error}", file=sys.stderr)
        return 1
    # A symbol of the span hot path resolves: the library is really loaded, not just mapped.
    library["_ZN4lens6detail26g_span_pipeline_generationE"]
    print("loaded", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
