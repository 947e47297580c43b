"""ClientHello and ServerHello parsing, on RFC 8448's TLS 1.3 trace."""

from analyzer.tls.hello import parse_client_hello, parse_server_hello
from tests.helpers.rfc8448 import CLIENT_HELLO, CLIENT_RANDOM, SERVER_HELLO


def test_hellos_rfc8448():
    ch = parse_client_hello(CLIENT_HELLO[4:])
    assert ch["random"] == CLIENT_RANDOM
    assert ch["sni"] == "server"
    assert 0x0304 in ch["versions"]
    assert ch["cipher_suites"] == [0x1301, 0x1303, 0x1302]
    sh = parse_server_hello(SERVER_HELLO[4:])
    assert sh["version"] == 0x0304 and sh["cipher_suite"] == 0x1301 and not sh["hrr"]
