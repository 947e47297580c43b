"""The state of one records field's decoding: limits, the decompression budget (shared by the
records fields of a message), the issues (at most ``max_issues`` of each code listed), and
decompression within those bounds. See :mod:`analyzer.dissect.records`.
"""

from __future__ import annotations

from analyzer.dissect.codecs import Limits, blob_cap, codec_name, declared_size, decompress_capped
from analyzer.issues import (
    RECORDS_DECOMPRESSION_BUDGET,
    RECORDS_DECOMPRESSION_LIMIT,
    RECORDS_ISSUES_SUPPRESSED,
)
from analyzer.model import Issue

_MAX_DEPTH_CAP = 16  # whatever Limits says, recursion stays shallow


class CappedIssues(list):
    """The issues of one records field: at most ``cap`` of each code are kept, the rest counted
    and summarised by :meth:`close` in one ``records.issues_suppressed`` per code (a batch of a
    million malformed records must not cost a million Issue objects)."""

    __slots__ = ("cap", "counts", "dropped")

    def __init__(self, cap: int) -> None:  # list's own __init__ is not needed: an empty list
        self.cap = cap if cap > 1 else 1
        self.counts: dict[str, int] = {}
        self.dropped: dict[str, Issue] | None = None  # code -> the first issue not listed

    def append(self, issue: Issue) -> None:
        code = issue.code
        n = self.counts[code] = self.counts.get(code, 0) + 1
        if n <= self.cap:
            list.append(self, issue)
        elif self.dropped is None:
            self.dropped = {code: issue}
        elif code not in self.dropped:
            self.dropped[code] = issue

    def close(self) -> list[Issue]:
        for code, first in (self.dropped or {}).items():
            more = self.counts[code] - self.cap
            list.append(
                self,
                RECORDS_ISSUES_SUPPRESSED(
                    f"{more} more {code} issues in this records field are not listed (the first "
                    f"{self.cap} are; the next was: {first.message})",
                    first.offset,
                    first.where,
                ),
            )
        return self


class DecodeContext:
    __slots__ = ("limits", "bodies", "issues", "budget", "max_depth", "light", "budget_said")

    def __init__(self, limits: Limits, bodies: bool, budget: int | None = None) -> None:
        self.limits = limits
        self.bodies = bodies
        self.issues: list[Issue] = CappedIssues(limits.max_issues)
        # a negative budget: spent, and said (records.decompression_budget is said once a message)
        self.budget = limits.max_total_output if budget is None else max(budget, 0)
        self.max_depth = min(limits.max_depth, _MAX_DEPTH_CAP)
        # what the last decode_set only counted past max_records: (entries, last offset)
        self.light: tuple[int, int | None] = (0, None)
        self.budget_said = budget is not None and budget < 0

    def inflate(self, codec: int, data, ioff: int, where: str) -> tuple[bytes | None, Issue | None]:
        """Decompress one blob within the request's remaining budget; a refusal caused by the
        budget (not by the blob's own limits) is ``records.decompression_budget``, said once."""
        limits = self.limits
        raw, issue = decompress_capped(codec, data, limits, self.budget)
        # the blob's own cap (size and ratio): a refusal under a smaller budget is the budget's
        own = blob_cap(limits, len(data))
        if (
            raw is None
            and issue is not None
            and issue.code == RECORDS_DECOMPRESSION_LIMIT.code
            and self.budget < own
        ):
            issue = None
            if not self.budget_said:
                self.budget_said = True
                self.issues.append(
                    RECORDS_DECOMPRESSION_BUDGET(
                        f"the records of this message would decompress to more than"
                        f" {self.limits.max_total_output} bytes (max_total_output; raise it with"
                        f" --max-decompressed): this and later compressed batches are not decompressed",
                        ioff,
                        where,
                    )
                )
        if raw is not None:
            self.budget -= len(raw)
        return raw, issue

    def judge(self, codec: int, data, ioff: int, where: str) -> int | None:
        """A compressed blob that is not inflated (no bodies): the size its codec's framing
        declares (:func:`~analyzer.dissect.codecs.declared_size`) is held against the limits
        inflating it would apply, so the damage is named without the work:
        ``records.decompression_limit`` for a blob over its own cap, the message's
        ``records.decompression_budget`` once the declared sizes exceed it. A blob that
        declares nothing costs nothing here."""
        size = declared_size(codec, data)
        if size is None:
            return None
        limits = self.limits
        # a blob's cap is at least min(max_output, ratio_grace): a size within both is under it
        if size > limits.ratio_grace or size > limits.max_output:
            own = blob_cap(limits, len(data))
            if size > own:
                self._over_cap(codec, data, size, own, ioff, where)
                return None
        if size > self.budget and not self.budget_said:
            self.budget_said = True
            self.issues.append(
                RECORDS_DECOMPRESSION_BUDGET(
                    f"the records of this message declare more than {limits.max_total_output}"
                    " decompressed bytes in their codec headers (max_total_output; raise it with"
                    " --max-decompressed): export --records and check do not decompress this"
                    " and later compressed batches",
                    ioff,
                    where,
                )
            )
        left = self.budget - size
        self.budget = left if left > 0 else 0
        return size

    def _over_cap(self, codec: int, data, size: int, own: int, ioff: int, where: str) -> None:
        """``records.decompression_limit`` for a blob that declares more than its cap."""
        limits = self.limits
        self.issues.append(
            RECORDS_DECOMPRESSION_LIMIT(
                f"{codec_name(codec)} payload of {len(data)} bytes declares {size} decompressed bytes:"
                f" over its limit of {own} bytes (max_output={limits.max_output},"
                f" max_ratio={limits.max_ratio}); not inflated here (export --records and"
                " check decompress)",
                ioff,
                where,
            )
        )

    def add(self, issue: Issue, offset: int, where: str) -> None:
        """A codec's issue (built without a location), placed at ``offset`` and ``where``."""
        self.issues.append(Issue(issue.severity, issue.code, issue.message, offset, where))
