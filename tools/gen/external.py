"""Clients that are programs outside Python (kafkajs under Node.js, the Go clients): how a
scenario hands one its records and turns what it prints into the manifest's events.

The program reads one JSON spec on stdin::

    {"bootstrap": "127.0.0.1:P1,...", "topic": ..., "group": ..., "client_id": ...,
     "codec": ..., "timeout_ms": ..., "linger_ms": ..., "records": [
        {"partition": 0, "key": ..., "value": ..., "headers": [[name, value], ...] | null,
         "timestamp": ms}, ...]}

and prints one JSON object a line on stdout: ``{"kind": "produced" | "consumed", "topic",
"partition", "offset", "key", "value", "headers", "timestamp"[, "error"]}`` per record, and
``{"kind": "note", "text": ...}`` for anything unexpected. Its stderr (the client's own log)
goes to the worker's log. Building the program (``go build``, ``npm ci``) is the client
module's ``prepare``, run by the generator before the capture, outside the namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from .core import Ctx, Msg

LINGER_MS = 100  # the producers' batching delay, as the Python clients' linger_ms=100


class ToolchainMissing(SystemExit):
    """A generator dependency outside Python is missing: the message says what to install
    (tools/gen/CLIENTS.md)."""


def need_tool(tool: str, install: str) -> str:
    """The path of ``tool``, or ToolchainMissing naming how to install it."""
    found = shutil.which(tool)
    if found is None:
        raise ToolchainMissing(f"{tool} not found: {install} (see tools/gen/CLIENTS.md)")
    return found


def cache_dir(*parts: str) -> Path:
    """The generator's build cache, ``~/.cache/kafka-analyzer-gen-captures/...``."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base.joinpath("kafka-analyzer-gen-captures", *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def spec(ctx: Ctx, topic: str, group: str, codec: str, msgs: list[Msg]) -> dict:
    return {
        "bootstrap": ctx.bootstrap,
        "topic": topic,
        "group": group,
        "client_id": f"gen-{ctx.name}",
        "codec": codec,
        "timeout_ms": int(max(1.0, ctx.left() - 2.0) * 1000),
        "linger_ms": LINGER_MS,
        "records": [
            {
                "partition": m.partition,
                "key": m.key,
                "value": m.value,
                "headers": None if m.headers is None else [list(h) for h in m.headers],
                "timestamp": m.timestamp,
            }
            for m in msgs
        ],
    }


def run_program(ctx: Ctx, cmd: list[str], job: dict, cwd: Path | None = None) -> None:
    """Run ``cmd`` with ``job`` on stdin; every record line it prints becomes an event (in the
    order printed), every other line a note. A program that fails or hangs leaves a note."""
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr, text=True, cwd=cwd
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(job))
    proc.stdin.close()
    for line in proc.stdout:
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            ctx.events.note(f"{Path(cmd[0]).name} printed a line that is not JSON: {line[:200]}")
            continue
        kind = ev.pop("kind", None)
        if kind == "note":
            ctx.events.note(str(ev.get("text")))
        elif kind in ("produced", "consumed"):
            ctx.events.emit(kind, **ev)
        else:
            ctx.events.note(f"{Path(cmd[0]).name} printed an unknown line: {line[:200]}")
    try:
        rc = proc.wait(max(1.0, ctx.left()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        ctx.events.note(f"{Path(cmd[0]).name} hung: killed")
        return
    if rc != 0:
        ctx.events.note(f"{Path(cmd[0]).name} exited with status {rc}")


def program_scenario(
    cmd: Callable[[], list[str]], topic: str, codec: str, msgs: Callable[[str], list[Msg]]
) -> Callable[[Ctx], None]:
    """A scenario's run: the program ``cmd()`` produces ``msgs(scenario name)`` to ``topic``
    with ``codec`` and reads them back as group ``g-<scenario name>``."""

    def run(ctx: Ctx) -> None:
        run_program(ctx, cmd(), spec(ctx, topic, f"g-{ctx.name}", codec, msgs(ctx.name)))

    return run
