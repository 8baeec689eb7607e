"""Shared fixtures of the Python package's tests: the repository's examples and the CLI."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def quickstart(duration: float = 1.0):
    """The quick start, shortened to `duration` seconds (the same model otherwise)."""
    import hybridsim

    return hybridsim.load(EXAMPLES / "quickstart.toml").with_overrides({"analysis.duration": duration})


@pytest.fixture
def quickstart_path() -> Path:
    return EXAMPLES / "quickstart.toml"


def cli_binary():
    """The `hybridsim` binary: $HYBRIDSIM_BIN, target/release or target/debug of the checkout,
    or the one on PATH."""
    env = os.environ.get("HYBRIDSIM_BIN")
    if env:
        return env
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for profile in ("release", "debug"):
        p = target / profile / "hybridsim"
        if p.exists():
            return str(p)
    return shutil.which("hybridsim")


@pytest.fixture
def cli():
    exe = cli_binary()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("no hybridsim binary (build it with `cargo build --release`)")
        pytest.skip("no hybridsim binary (cargo build --release)")

    def run(*args):
        return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, check=False)

    return run
