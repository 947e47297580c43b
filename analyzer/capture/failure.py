"""What live capture sources share: their failure, as one ``capture.source_failed`` issue."""

from __future__ import annotations

from analyzer.issues import CAPTURE_SOURCE_FAILED
from analyzer.model import Issue


class SourceFailure:
    """Mixed into a live source that keeps its capture issues in ``issues`` (its failure, and
    others such as dropped packets): the first failure is kept, later ones add nothing."""

    issues: list[Issue]

    @property
    def error(self) -> str | None:
        """Why the capture failed (the first reason), or None."""
        return next((i.message for i in self.issues if i.code == CAPTURE_SOURCE_FAILED.code), None)

    def _fail(self, message: str) -> None:
        if self.error is None:
            self.issues.append(CAPTURE_SOURCE_FAILED(message))
