"""The texts of the status line and of the problems banner (rich Text, no Textual)."""

from __future__ import annotations

import os

from rich.text import Text

from analyzer.model import Issue, Severity
from analyzer.pipeline import UNUSABLE


def problem_lines(
    load_error: str | None,
    capture_issues: list[Issue],
    no_kafka: str | None,
    live: bool = False,
) -> list[Text]:
    """What the user must know about the input: why it could not be read, its damage, or why
    no Kafka was found (``no_kafka``: the run's own line, :meth:`~analyzer.pipeline.Outcome.problems`,
    with its hints: TLS without a key log, a snap length that cut the frames, broker ports)."""
    lines: list[Text] = []
    if load_error:
        lines.append(Text(f"Cannot analyse the capture: {load_error}", style="bold"))
    for i in capture_issues:
        if i.code in UNUSABLE:
            lines.append(Text(f"Not a capture file: {i.message}", style="bold"))
        elif i.severity >= Severity.ERROR:
            lines.append(Text(f"Capture damaged: {i.message} (showing what was read before the damage)"))
        else:
            lines.append(Text(f"Capture {i.severity}: {i.message}"))
    if no_kafka and not load_error:
        text = no_kafka[:1].upper() + no_kafka[1:]
        if live:
            text = text.replace("No Kafka traffic found", "No Kafka traffic captured", 1)
        lines.append(Text(text))
    return lines


def status_text(
    path: str,
    done: bool,
    fraction: float | None,
    packets: int,
    exchanges: int,
    error_rows: int,
    filter_text: str,
    conn_scope: int | None,
    shown: int,
    problems: bool,
    picked: str = "",
) -> Text:
    """``[N of M match (filter)]  file  done  N packets  N exchanges  N with errors``."""
    if done:
        state = Text("done", style="green")
    elif fraction is not None:
        state = Text(f"analysing… {fraction * 100:.0f}%", style="yellow")
    else:
        state = Text("analysing…", style="yellow")
    t = Text()
    if filter_text or conn_scope is not None or picked:  # first: what the list shows (80 columns cut the end)
        what = " ".join(filter_text.split())
        scope = f"conn {conn_scope}" if conn_scope is not None else ""
        said = " ".join(x for x in (picked, what, scope) if x)
        t.append(f"{shown} of {exchanges} match ({said})", style="cyan")
        t.append("  ")
    t.append(os.path.basename(path), style="bold")
    t.append("  ")
    t.append_text(state)
    t.append(f"  {packets} packets  {exchanges} exchanges")
    if error_rows:
        t.append(f"  {error_rows} with errors", style="red")
    if problems:
        t.append("  capture problems: see top", style="bold red")
    return t


def live_text(
    interface: str,
    running: bool,
    rate: float,
    packets: int,
    exchanges: int,
    received: int,
    dropped: int,
    ring_full: int,
    not_kept: int,
    following: bool = False,
) -> Text:
    """`` LIVE  eth0  following  N pkt/s  N pkts  N exchanges  drops kernel N queue N`` (``stopped``
    once the capture ended; 80 columns wide at most with counts below a million): what the
    status line starts with in a live session. Queue drops are exchanges not kept (the live
    session keeps a bounded number)."""
    t = Text()
    if running:
        t.append(" LIVE ", style="bold white on red")
    else:
        t.append(" stopped ", style="bold black on yellow")
    t.append(f" {interface}", style="bold")
    if running:
        if following:
            t.append("  following", style="cyan")
        t.append(f"  {rate:,.0f} pkt/s")
    t.append(f"  {packets:,} pkts  {exchanges:,} exchanges")
    bad = dropped or not_kept
    t.append(
        f"  drops kernel {dropped:,}" + (f" of {received:,}" if dropped else "") + f" queue {not_kept:,}",
        style="bold red" if bad else "green",
    )
    if ring_full:
        t.append(f" (ring full {ring_full}x)", style="red")
    return t


def filter_hint(
    text: str,
    error_message: str | None = None,
    position: int = 0,
    end: int = 0,
    note: str | None = None,
    shown: int | None = None,
    total: int = 0,
) -> Text:
    """The line under the filter bar: what is wrong with ``text`` and where (the offending
    range marked in the expression), or how many exchanges it keeps (``shown`` of ``total``;
    None while it is not applied yet)."""
    t = Text(no_wrap=True, overflow="ellipsis")
    if error_message is not None:
        t.append("✗ ", style="bold red")
        t.append(f"{error_message} (at {position})\n", style="red")
        t.append("  ")
        end = max(position + 1, min(end, len(text)))
        t.append(text[:position])
        t.append(text[position:end] or " ", style="bold white on red")
        t.append(text[end:])
        return t
    if not text.strip():
        t.append("no filter: every exchange", style="dim")
        return t
    t.append("✓ ", style="bold green")
    if note:
        t.append(note, style="yellow")
    else:
        t.append("display filter", style="green")
    if shown is None:
        t.append("  …", style="dim")
    else:
        t.append(f"  {shown} of {total} match", style="bold cyan")
    return t
