"""The ``:`` command line (a modal over any view)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Input

COMMANDS = {
    "conn": "conn",
    "connections": "conn",
    "ex": "ex",
    "exchanges": "ex",
    "stats": "stats",
    "issues": "issues",
    "groups": "groups",
    "clients": "clients",
    "topology": "topology",
    "producers": "producers",
    "transactions": "transactions",
    "txn": "transactions",
    "io": "io",
    "timeline": "timeline",
    "tl": "timeline",
    "help": "help",
    "q": "quit",
    "quit": "quit",
}


def parse_command(text: str) -> str | None:
    """The view a command names (prefixes of one command are accepted), or None."""
    word = text.strip().lstrip(":").lower()
    if not word:
        return None
    if word in COMMANDS:
        return COMMANDS[word]
    found = {v for k, v in COMMANDS.items() if k.startswith(word)}
    return found.pop() if len(found) == 1 else None


class CommandScreen(ModalScreen[str | None]):
    """One line at the bottom; Enter runs the command, Esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    CommandScreen { align: left bottom; background: $background 0%; }
    CommandScreen > Input { dock: bottom; width: 100%; border: tall $accent; }
    """

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder=(
                "conn, ex, stats, issues, groups, clients, topology, producers, transactions, io, "
                "timeline, help, quit"
            ),
            id="command",
        )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
