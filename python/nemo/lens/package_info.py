"""The package's identity. The version is lens-cpp's (the native core's)."""

from ._lens import __version__

MAJOR, MINOR, PATCH = (int(part) for part in __version__.split(".")[:3])
PRE_RELEASE = ""
VERSION = (MAJOR, MINOR, PATCH, PRE_RELEASE)
__shortversion__ = ".".join(map(str, VERSION[:3]))

__package_name__ = "nemo_lens"
__contact_names__ = "lens-cpp"
__contact_emails__ = ""
__homepage__ = ""
__repository_url__ = ""
__download_url__ = ""
__description__ = "NeMo Lens's nemo.lens API on lens-cpp's native telemetry core"
__license__ = "Apache2"
__keywords__ = "deep learning, distributed training, telemetry, opentelemetry, nemo, lens"
