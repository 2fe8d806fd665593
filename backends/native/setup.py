"""The build step of batchspec-native: `cargo build --release --offline` of the std-only crate in
this folder, then the library is copied into the package (batchspec_native/), so the wheel
holds it. The crate has no dependency, so the build needs cargo but never the crates registry.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
LIBRARY = {"darwin": "libbatchspec_native.dylib", "win32": "batchspec_native.dll"}.get(
    sys.platform, "libbatchspec_native.so"
)


class BuildWithCargo(build_py):
    """build_py that first builds the Rust library and puts it beside the Python modules."""

    def run(self) -> None:
        cargo = shutil.which("cargo")
        if cargo is None:
            raise SystemExit(
                "batchspec-native needs cargo to build its library: install it with rustup (https://rustup.rs)"
            )
        target = HERE / "target"
        subprocess.run(
            [
                cargo,
                "build",
                "--release",
                "--offline",
                "--manifest-path",
                str(HERE / "Cargo.toml"),
                "--target-dir",
                str(target),
            ],
            check=True,
        )
        built = target / "release" / LIBRARY
        shutil.copy2(built, HERE / "batchspec_native" / LIBRARY)
        super().run()
        # package_data copies the library into build_lib when it was there before the build; copy
        # it in any case
        destination = Path(self.build_lib) / "batchspec_native" / LIBRARY
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, destination)


class BinaryDistribution(Distribution):
    """A distribution with a compiled library: its wheel is tagged for this platform."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildWithCargo}, distclass=BinaryDistribution)
