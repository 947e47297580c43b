"""TLS under Kafka: record layer, hellos, key logs and decryption (sans-IO).

:class:`analyzer.tls.layer.TlsConnection` sits between TCP reassembly and Kafka framing: the
pipeline hands it the ciphertext StreamData/Gap events of a connection whose first bytes are a
TLS record, and feeds the plaintext events it returns to the Kafka framer. The core of this
package uses the standard library, ``cryptography`` and :mod:`analyzer.model` /
:mod:`analyzer.events` only.
"""
