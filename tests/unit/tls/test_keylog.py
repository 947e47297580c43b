"""NSS key log parsing: comments, blank lines and bad lines (one issue each)."""

from analyzer.tls.keylog import KeyLog
from tests.helpers.rfc8448 import CLIENT_RANDOM


def test_keylog_parsing():
    kl = KeyLog()
    text = f"# comment\nCLIENT_RANDOM {CLIENT_RANDOM.hex()} {'ab' * 48}\nnonsense line\n\n"
    assert kl.add_text(text, "f") == 1
    assert kl.get("CLIENT_RANDOM", CLIENT_RANDOM) == b"\xab" * 48
    assert [i.code for i in kl.issues] == ["tls.keylog_bad_line"]
