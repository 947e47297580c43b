"""The client.* display-filter fields: what one exchange says of its client, as
:class:`~analyzer.session.clients.ClientTracker` reads it, from that exchange alone or from the
run's knowledge up to it (never from exchanges after it, so a streaming filter, live or ``read
-Y``, gives the answer the whole capture gives):

* ``client.software``, ``client.software_version``: the name and version the request's client id
  gave in ApiVersions v3+ (KIP-511), as the run knows them at this exchange (as ``software``);
* ``client.removed``: the request uses an API version that Kafka 4.x (the newest release the
  schemas know) refuses: the versions KIP-896 removed, as ClientTracker's readiness judges them
  (:func:`~analyzer.session.clients.refuses`);
* ``client.all_topics``: a Metadata request that asks for every topic (ClientTracker's share of
  all-topics requests).
"""

from __future__ import annotations

from analyzer.model import Exchange
from analyzer.session.clients import TARGETS, all_topics, refuses, target_floors

# the versions Kafka 4.x accepts (4.1 and later accept what 4.0 does)
_FLOORS = target_floors(TARGETS[-1])


def removed(ex: Exchange) -> bool | None:
    # (the API and version only: the TUI's index answers them without decoding the exchange; a
    # response without its request has no version)
    key, version = ex.api_key, ex.api_version
    if key is None or version is None:
        return None
    return refuses(_FLOORS, key, version)


def metadata_all_topics(ex: Exchange) -> bool | None:
    return all_topics(ex)


def software(knowledge, ex: Exchange, part: int | None) -> str | None:
    """The software the run knows for the exchange's client id: its name (``part`` 0), its
    version (1), or both joined by a space (None)."""
    cid = ex.client_id
    if knowledge is None or cid is None:
        return None
    sw = knowledge.clients.get(cid)
    if not sw:
        return None
    if part is not None:
        return sw[part] or None
    return " ".join(x for x in sw if x) or None
