"""The Go clients' toolchain: each Go scenario program (tools/gen/go/<program>/main.go) is built
offline with Debian's ``golang-go`` in GOPATH mode (``GO111MODULE=off``) against the library
Debian packages under /usr/share/gocode, into the generator's cache. No module proxy, no network.

The client modules (sarama.py, kafka_go.py) name their program and Debian package; this module
builds it (their scenarios' ``prepare``), finds the binary and says the library's version.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .external import ToolchainMissing, cache_dir, need_tool

HERE = Path(__file__).resolve().parent / "go"
GOPATH = Path("/usr/share/gocode")
GO_INSTALL = "apt-get install golang-go"


@dataclass(frozen=True)
class GoClient:
    program: str  # directory under tools/gen/go
    package: str  # the Debian package of the library
    import_path: str  # where that package puts the library under GOPATH/src

    def binary(self) -> Path:
        return cache_dir("go", "bin") / f"{self.program}-scenario"

    def build(self) -> None:
        """``go build`` the program offline, or ToolchainMissing naming what to install."""
        go = need_tool("go", GO_INSTALL)
        if not (GOPATH / "src" / self.import_path).is_dir():
            raise ToolchainMissing(
                f"{self.import_path} not found under {GOPATH}/src: apt-get install {self.package} "
                "(see tools/gen/CLIENTS.md)"
            )
        env = dict(os.environ)
        env.update(
            GO111MODULE="off",
            GOPATH=str(GOPATH),
            GOFLAGS="",
            GOCACHE=str(cache_dir("go", "build-cache")),
            GOPROXY="off",
        )
        done = subprocess.run(
            [go, "build", "-o", str(self.binary()), "."],
            cwd=HERE / self.program,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not self.binary().exists():
            errors = [ln for ln in done.stderr.splitlines() if "warning" not in ln and "note:" not in ln]
            raise SystemExit(
                f"go build of tools/gen/go/{self.program} failed (exit {done.returncode}):\n"
                + "\n".join(errors[-20:])
            )

    def cmd(self) -> list[str]:
        return [str(self.binary())]

    def version(self, name: str) -> str:
        """``<name> <upstream version> (Debian <package> <version>, golang-go <version>)``."""
        deb = _dpkg_version(self.package)
        go = _dpkg_version("golang-go")
        upstream = deb.split(":")[-1].rsplit("-", 1)[0]  # Debian version: [epoch:]upstream-revision
        return f"{name} {upstream} (Debian {self.package} {deb}, golang-go {go})"


def _dpkg_version(package: str) -> str:
    try:
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "not installed"
