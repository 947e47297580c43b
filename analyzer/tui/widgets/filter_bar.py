"""The filter input: a display filter (or plain words), applied 0.3 s after typing stops, on
Enter, or on Esc; up and down walk the filters applied before (the session's history)."""

from __future__ import annotations

from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input

PLACEHOLDER = "display filter (api == Produce and latency > 5ms; words search); enter applies, ↑↓ history"


class FilterBar(Input):
    """Posts :class:`FilterBar.Edited` on every change (the app validates it at once) and
    :class:`FilterBar.Apply` with the text to filter by (debounced while typing)."""

    DELAY = 0.3
    BINDINGS = [
        Binding("up", "history(-1)", "Older filter", show=False),
        Binding("down", "history(1)", "Newer filter", show=False),
    ]

    class Apply(Message):
        def __init__(self, text: str, submitted: bool = False) -> None:
            super().__init__()
            self.text = text
            self.submitted = submitted  # Enter: the list takes the focus back

    class Edited(Message):
        """The text changed (typed, or taken from the history): validate it now."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, history: list[str] | None = None, **kwargs) -> None:
        super().__init__(placeholder=PLACEHOLDER, **kwargs)
        self._timer: Timer | None = None
        self.history = history if history is not None else []  # oldest first
        self._at: int | None = None  # the history entry shown (None: what was typed)
        self._typed = ""

    def cancel_pending(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def set_text(self, text: str) -> None:
        """Show ``text`` without applying it (the app applies it)."""
        with self.prevent(Input.Changed):
            self.value = text
        self.cursor_position = len(text)
        self.set_class(bool(text.strip()), "shown")

    def action_history(self, step: int) -> None:
        """Show the previous (``step`` -1) or next filter of the history; past the newest, the
        text that was being typed."""
        h = self.history
        if not h:
            return
        if self._at is None:
            if step > 0:
                return
            self._typed = self.value
            at = len(h) - 1
        else:
            at = self._at + step
        if at < 0:
            return
        if at >= len(h):
            self._at = None
            self.value = self._typed
        else:
            self._at = at
            self.value = h[at]
        self.cursor_position = len(self.value)

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.cancel_pending()
        value = event.value
        if self._at is not None and value != self.history[self._at]:
            self._at = None  # edited: no longer the history entry
        self.post_message(self.Edited(value))
        self._timer = self.set_timer(self.DELAY, lambda: self.post_message(self.Apply(value)))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.cancel_pending()
        self._at = None
        self.post_message(self.Apply(event.value, submitted=True))
