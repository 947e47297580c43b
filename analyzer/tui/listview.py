"""What the exchange list shows: the rows a view keeps (its text search or display filter and
its connection scope), sorted by one column while rows stream in (row indexes only)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence

from analyzer.tui.rows import COLUMNS, TIME_COLUMN, Indexes, Row, Taken
from analyzer.tui.textsearch import keep


class SortedRows:
    """The rows a view shows, kept sorted by one column while rows stream in.

    Only the row indexes are kept (:class:`Indexes`, 4 bytes a row), sorted by ``(column
    key, index)`` (ties keep arrival order); rows that sort after every row shown are
    appended, the others inserted (in time order, only the exchanges that completed late,
    such as long-polling Fetches: the keys of the rows they are compared with are made again
    from their rows)."""

    def __init__(self, sort: int = TIME_COLUMN, reverse: bool = False) -> None:
        self.sort = sort
        self.reverse = reverse
        self.indexes = Indexes()
        self._last: tuple | None = None  # (key, index) of the last row

    def reset(self, rows: Iterable[Row]) -> None:
        key = COLUMNS[self.sort].key
        keys: list = []
        idx = Indexes()
        for r in rows:
            keys.append(key(r))
            idx.append(r.index)
        n = len(keys)
        # stable sorts: by index first (when the rows did not come in index order), then key
        pos = list(range(n))
        if any(idx[i] > idx[i + 1] for i in range(n - 1)):
            pos.sort(key=idx.__getitem__)
        pos.sort(key=keys.__getitem__)
        self.indexes = Indexes(idx[p] for p in pos)
        self._last = (keys[pos[-1]], idx[pos[-1]]) if n else None

    def add(self, rows: Iterable[Row]) -> bool:
        """Add ``rows``; True when they were all appended at the end (ascending)."""
        key = COLUMNS[self.sort].key
        idx = self.indexes
        appended = True
        for r in rows:
            k = (key(r), r.index)
            last = self._last
            if last is None or k >= last:
                idx.append(r.index)
                self._last = k
            else:
                store = r.store
                if self.sort == TIME_COLUMN:  # the usual order: the times without the rows
                    pos = bisect_right(idx, k, key=lambda i: (store.ts(i), i))
                else:
                    pos = bisect_right(idx, k, key=lambda i: (key(store[i]), i))
                idx.insert(pos, r.index)
                appended = False
        return appended

    def shown(self) -> Indexes:
        """The row indexes in display order."""
        return Indexes(self.indexes[::-1]) if self.reverse else Indexes(self.indexes)


class ListView:
    """What the exchange list shows: the rows taken so far (arrival order), those the filter
    ``text``, the connection scope ``conn`` and a view's pick keep, sorted (``shown``: row
    indexes)."""

    def __init__(self, rows: Taken | None = None) -> None:
        # the rows taken (a list, or the first rows of an index's store)
        self.rows: list[Row] | Taken = rows if rows is not None else []
        self.order = SortedRows()
        self.shown: Indexes = Indexes()
        self.text = ""
        self.conn: int | None = None
        self.predicate: Callable[[Row], bool] | None = None  # the display filter, when text is one
        self.picked: frozenset[int] | None = None  # a view's pick of exchanges (a rebalance's), by index
        self.picked_label = ""  # what they are ("rebalance of g to generation 3")

    def add(self, rows: list[Row]) -> Sequence[int] | None:
        """Take new rows: the indexes appended at the end of ``shown``, or None when ``shown``
        was rebuilt (a new row sorts before rows already shown)."""
        self.rows.extend(rows)
        new = [r for r in rows if keep(r, self.text, self.conn, self.predicate, self.picked)]
        if not new:
            return []
        before = len(self.order.indexes)
        if self.order.add(new) and not self.order.reverse:
            added = self.order.indexes[before:]
            self.shown.extend(added)
            return added
        self.shown = self.order.shown()
        return None

    def rebuild(self) -> None:
        """``shown`` again, after the filter, the scope or the sort order changed."""
        self.order.reset(r for r in self.rows if keep(r, self.text, self.conn, self.predicate, self.picked))
        self.shown = self.order.shown()

    def sort_by(self, column: int, reverse: bool = False) -> None:
        self.order = SortedRows(column, reverse)
        self.rebuild()
