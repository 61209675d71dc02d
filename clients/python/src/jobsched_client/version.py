"""The package's version, and the User-Agent the SDK and the CLI send."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("jobsched-client")
except PackageNotFoundError:  # run from a source tree without installing
    __version__ = "0.0.0"

USER_AGENT = f"jobsched-client/{__version__}"
