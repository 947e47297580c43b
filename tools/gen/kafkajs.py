"""kafkajs (Node.js, from npm) scenarios: a producer (one send(), acks=-1, gzip, record batch v2
with headers, a null key, a tombstone, an empty value and an 8 KB value) and a consumer group
(JoinGroup/SyncGroup/Heartbeat, commitOffsets, LeaveGroup), against the mock cluster and Tansu.

The program is tools/gen/kafkajs/scenario.js; its dependency is pinned by the committed
package.json and package-lock.json and installed by ``npm ci`` (the scenarios' ``prepare``)
into tools/gen/kafkajs/node_modules (not committed).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from . import mock, tansu
from .core import Msg, Scenario, edge_messages, messages
from .external import ToolchainMissing, need_tool, program_scenario

NAME = "kafkajs"
HERE = Path(__file__).resolve().parent / "kafkajs"
NODE_INSTALL = "apt-get install nodejs npm (Node.js 14 or later)"


def _installed() -> Path:
    return HERE / "node_modules" / "kafkajs" / "package.json"


def prepare() -> None:
    """``npm ci`` when node_modules is missing or older than package-lock.json."""
    need_tool("node", NODE_INSTALL)
    npm = need_tool("npm", NODE_INSTALL)
    stamp = HERE / "node_modules" / ".package-lock.json"  # npm ci writes it
    lock = HERE / "package-lock.json"
    if _installed().exists() and stamp.exists() and stamp.stat().st_mtime >= lock.stat().st_mtime:
        return
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not _installed().exists():
        raise ToolchainMissing(
            f"npm ci in {HERE} failed (exit {done.returncode}): {done.stderr.strip()[-1000:]}"
        )


def cmd() -> list[str]:
    return [need_tool("node", NODE_INSTALL), str(HERE / "scenario.js")]


def version() -> str:
    kafkajs = json.loads(_installed().read_text())["version"] if _installed().exists() else "not installed"
    try:
        done = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
        node = done.stdout.strip()
    except FileNotFoundError:
        node = "not installed"
    return f"kafkajs {kafkajs} (Node.js {node})"


def _records(name: str) -> list[Msg]:
    msgs = messages(name, 6)
    return msgs + edge_messages(name, len(msgs))


def _scenario(name: str, broker: str, against: str, notes: tuple[str, ...] = ()) -> Scenario:
    return Scenario(
        name,
        NAME,
        "auto (ApiVersions)",
        "gzip",
        ("kafkajs-gzip",),
        program_scenario(cmd, "kafkajs-gzip", "gzip", _records),
        f"kafkajs producer{against} (one send(), acks=-1, gzip, record batch v2) sends 6 keyed records "
        "with headers over 3 partitions, then a null key, a tombstone (null value), an empty value "
        "and an 8 KB value spanning several TCP segments; a kafkajs consumer group (JoinGroup/"
        "SyncGroup/Heartbeat) fetches them back, commits and disconnects (LeaveGroup v3).",
        notes=notes,
        prepare=prepare,
        broker=broker,
    )


def scenarios() -> list[Scenario]:
    """The kafkajs scenarios against the mock cluster and Tansu, in manifest order."""
    return [
        _scenario(
            "kafkajs-gzip",
            mock.NAME,
            "",
            (
                "The librdkafka mock cluster reads every LeaveGroup as v0-v2 and answers in the "
                "v1-v2 layout: kafkajs' LeaveGroup v3 gets UNKNOWN_MEMBER_ID in a body without the "
                "members array (quirk.mock_leave_group_layout).",
            ),
        ),
        _scenario(f"{tansu.NAME}-kafkajs-gzip", tansu.NAME, f" {tansu.AGAINST}"),
    ]
