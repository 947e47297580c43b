"""Hand-built exchanges (for the filter language): the connection, frames and decoded bodies an
:class:`~analyzer.model.Exchange` carries, with the values the tests choose."""

from analyzer.model import ConnInfo, Endpoint, Exchange, Field, Frame, Message


def _frame(length: int, ts: float) -> Frame:
    return Frame(1, 0, 0, length, b"", ts, ts, (1,))


def make_ex(
    api=0,
    version=9,
    corr=7,
    client_id="app",
    latency_ms=12.5,
    errors=(),
    topics=None,
    issues=(),
    req_body=None,
    resp_body=None,
    client=("10.0.0.5", 40000),
    broker=("10.0.0.7", 9092),
    answered=True,
):
    conn = ConnInfo(3, Endpoint(*client), Endpoint(*broker), 0.0, True, client_direction=0)
    req = Message(_frame(100, 1.0), "request", api, version, corr, None, req_body, [], client_id)
    resp = None
    if answered:
        resp = Message(
            _frame(50, 1.0 + latency_ms / 1000.0),
            "response",
            api,
            version,
            corr,
            None,
            resp_body,
            [],
            None,
            list(errors),
        )
    ex = Exchange(conn, req, resp, list(issues))
    ex.topics = topics if topics is not None else {"orders": [0, 1]}
    return ex


def _leaf(name, typ, value):
    return Field(name, typ, value, 0, 0)


def produce_bodies() -> tuple[Field, Field]:
    """A Produce request body and its response: topic orders, partition 0 fine, 1 NOT_LEADER (6)."""

    def partition(idx, err):
        return Field(
            "partition_produce_response",
            "PartitionProduceResponse",
            None,
            0,
            0,
            [_leaf("index", "int32", idx), _leaf("error_code", "int16", err)],
        )

    topic = Field(
        "topic_produce_response",
        "TopicProduceResponse",
        None,
        0,
        0,
        [
            _leaf("name", "string", "orders"),
            Field(
                "partition_responses",
                "[]PartitionProduceResponse",
                2,
                0,
                0,
                [partition(0, 0), partition(1, 6)],
            ),
        ],
    )
    resp = Field(
        "produce_response",
        "ProduceResponse",
        None,
        0,
        0,
        [
            Field("responses", "[]TopicProduceResponse", 1, 0, 0, [topic]),
            _leaf("throttle_time_ms", "int32", 0),
        ],
    )
    req = Field(
        "produce_request",
        "ProduceRequest",
        None,
        0,
        0,
        [
            _leaf("transactional_id", "string", None),
            _leaf("acks", "int16", 1),
            _leaf("timeout_ms", "int32", 30000),
        ],
    )
    return req, resp
