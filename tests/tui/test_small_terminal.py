"""The TUI in a small terminal (80x24): the exchange list keeps at least 10 rows on screen and
the detail panes share the rest; ``z`` still gives the detail the whole screen."""

from __future__ import annotations

import asyncio

from analyzer.tui.widgets.detail_tree import DetailTree
from analyzer.tui.widgets.exchange_list import ExchangeList
from tests.tui.test_app import ROOT, started

MANY = ROOT / "captures" / "sarama-zstd.pcap"  # 40 exchanges


def shown_rows(table: ExchangeList) -> list[str]:
    """The exchange rows drawn on screen (the lines under the list's header), as text."""
    h = table.scrollable_content_region.height
    lines = [table.render_line(y).text.rstrip() for y in range(1, h)]
    return [t for t in lines if t.strip()]


def test_80x24_lists_at_least_10_exchanges_with_the_detail_below():
    async def go():
        async with started(MANY, size=(80, 24)) as (app, pilot):
            assert len(app.rows) >= 10
            table = app.query_one(ExchangeList)
            rows = shown_rows(table)
            assert len(rows) >= 10, rows
            assert [r.split()[0] for r in rows[:10]] == [str(i) for i in range(1, 11)]
            assert app.screen.has_class("-short")
            app.select_exchange(app.rows[0].index)
            await pilot.pause()
            tree = app.query_one(DetailTree)
            assert tree.display and tree.size.height >= 4  # the decoded tree, below the list
            await pilot.press("z", "z")  # list only, then detail only: the tree takes it all
            await pilot.pause()
            assert not table.display and tree.size.height > 15
            await pilot.press("z")
            await pilot.pause()
            assert len(shown_rows(table)) >= 10

    asyncio.run(go())


def test_a_tall_terminal_keeps_list_and_detail_even():
    async def go():
        async with started(MANY, size=(120, 40)) as (app, _pilot):
            assert app.screen.has_class("-tall") and not app.screen.has_class("-short")
            table = app.query_one(ExchangeList)
            detail = app.query_one("#detail")
            assert abs(table.outer_size.height - detail.outer_size.height) <= 1

    asyncio.run(go())
