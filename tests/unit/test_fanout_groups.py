"""analyzer.fanout's consumer-group items (no processes): the parent feeds them in capture order
up to the lowest watermark, never holds one more than REORDER_DELAY behind the newest key, and
counts an item that arrives after a later one was fed."""

from analyzer.fanout import REORDER_DELAY, Fanout


class Feed:
    def __init__(self):
        self.topic_ids = {}
        self.fed = []

    def item(self, key, ex, facts):
        self.fed.append(key)


def parent(n: int) -> tuple[Fanout, Feed]:
    feed = Feed()
    fan = Fanout("live:x", [], None, None, None, None, None, feed)  # type: ignore[arg-type]
    fan._heap, fan._seq, fan._gheap = [], 0, []
    fan._newest = fan._fed = float("-inf")
    fan._watermarks = [float("-inf")] * n
    fan._received, fan._dropped = [0] * n, [0] * n
    return fan, feed


def batch(fan, i, wm, keys, ids=None):
    fan._batch(i, ("batch", wm, [], 0, 0, ids or {}, [(k, None, ("facts",)) for k in keys], None), [])
    fan._feed(max(min(fan._watermarks), fan._newest - REORDER_DELAY))


def test_items_fed_in_key_order_up_to_the_lowest_watermark():
    fan, feed = parent(2)
    batch(fan, 0, 10.5, [10.0, 10.2], {"id1": "topic"})
    assert feed.fed == [] and feed.topic_ids == {"id1": "topic"}  # worker 1 may still send earlier ones
    batch(fan, 1, 10.3, [10.1])
    assert feed.fed == [10.0, 10.1, 10.2]
    assert fan.late == 0


def test_a_worker_behind_holds_nothing_longer_than_the_delay_and_its_late_items_are_counted():
    fan, feed = parent(2)
    batch(fan, 0, 20.0, [10.0, 11.0, 10.0 + REORDER_DELAY + 1.5])
    assert feed.fed == [10.0, 11.0]  # worker 1 said nothing: held no more than REORDER_DELAY
    batch(fan, 1, 12.0, [10.5, 11.5])
    assert fan.late == 1 and feed.fed == [10.0, 11.0, 10.5, 11.5]
    fan._feed(float("inf"))
    assert feed.fed[-1] == 10.0 + REORDER_DELAY + 1.5
