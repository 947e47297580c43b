"""A view that follows the analysis: while the capture is still being read (a file still
loading, a live capture) it reloads once a second when the index grew, and once more when the
analysis ended (the clients and topology views)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.tui.screens.base import View

if TYPE_CHECKING:
    from analyzer.tui.session import Session


class FollowingView(View):
    POLL = 1.0  # seconds between looks at the index while the analysis runs

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.loaded_done = False
        self.seen = -1

    def load(self) -> None:
        """Read what the view shows from the session (:meth:`reload` marks how far it was)."""
        raise NotImplementedError

    def show(self) -> None:
        """Show what :meth:`load` read."""
        raise NotImplementedError

    def reload(self) -> None:
        se = self.session
        self.loaded_done = se.done
        self.seen = len(se.rows) + se.index.dropped
        self.load()

    def follow(self) -> None:
        """(on_mount) Poll while the analysis runs."""
        if not self.loaded_done:
            self.set_interval(self.POLL, self._poll)

    def _poll(self) -> None:
        if self.loaded_done:
            return
        se = self.session  # (the rows taken by the UI: no lock to wait for while nothing came)
        if len(se.rows) + se.index.dropped != self.seen or se.done:
            self.reload()
            self.show()
