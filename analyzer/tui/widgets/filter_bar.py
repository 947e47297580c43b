"""The filter input: a display filter (or plain words), applied 0.3 s after typing stops, on
Enter, or on Esc."""

from __future__ import annotations

from textual import on
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input

PLACEHOLDER = (
    "filter: words in API, topic or client id (api:, topic:, client:), errors; enter applies, esc closes"
)


class FilterBar(Input):
    """Posts :class:`FilterBar.Apply` with the text to filter by (debounced while typing)."""

    DELAY = 0.3

    class Apply(Message):
        def __init__(self, text: str, submitted: bool = False) -> None:
            super().__init__()
            self.text = text
            self.submitted = submitted  # Enter: the list takes the focus back

    def __init__(self, **kwargs) -> None:
        super().__init__(placeholder=PLACEHOLDER, **kwargs)
        self._timer: Timer | None = None

    def cancel_pending(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def set_text(self, text: str) -> None:
        """Show ``text`` without applying it (the app applies it)."""
        with self.prevent(Input.Changed):
            self.value = text
        self.set_class(bool(text.strip()), "shown")

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.cancel_pending()
        value = event.value
        self._timer = self.set_timer(self.DELAY, lambda: self.post_message(self.Apply(value)))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.cancel_pending()
        self.post_message(self.Apply(event.value, submitted=True))
