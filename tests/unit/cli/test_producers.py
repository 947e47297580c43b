"""``producers``: a client id named with ``--client`` that no producer had is said as such."""

from __future__ import annotations

import json

from analyzer.cli import main
from tests.helpers.captures import CAPTURES


def test_a_client_named_that_produced_nothing(capsys):
    capsys.readouterr()
    assert main(["producers", str(CAPTURES / "producer-plain.pcap"), "--client", "nosuch"]) == 0
    assert capsys.readouterr().out.startswith("no producer with client id nosuch in the capture")
    assert main(["producers", str(CAPTURES / "producer-plain.pcap"), "--format", "json"]) == 0
    ids = {p["client_id"] for p in json.loads(capsys.readouterr().out)["producers"]}
    assert ids
    assert main(["producers", str(CAPTURES / "producer-plain.pcap"), "--client", *sorted(ids)[:1]]) == 0
    assert not capsys.readouterr().out.startswith("no producer")
