"""The SASL captures with known secrets (the ``sasl`` entries of captures/manifest.json) and the
grep for those secrets in an output, in every encoding: as text, hex (either case), base64 (at
each of the 3 alignments) and, in JSON, inside every string and ``{"base64": ...}`` value."""

from __future__ import annotations

import base64
import json
import re

from tests.helpers.captures import CAPTURES

MANIFEST = (
    json.loads((CAPTURES / "manifest.json").read_text()) if (CAPTURES / "manifest.json").exists() else []
)
SASL = [e for e in MANIFEST if "sasl" in e]


def scram_proofs(entry) -> list[bytes]:
    """The client proofs in the capture's bytes (the ``p=`` of every SCRAM client-final-message)."""
    raw = (CAPTURES / entry["file"]).read_bytes()
    return sorted(set(re.findall(rb"c=biws,r=[^,]+,p=([A-Za-z0-9+/]+=*)", raw)))


def scram_signatures(entry) -> list[bytes]:
    """The server signatures in the capture's bytes (the ``v=`` of every server-final-message):
    with the salt and iteration count beside them they allow the same guessing as the proofs."""
    raw = (CAPTURES / entry["file"]).read_bytes()
    return sorted(set(re.findall(rb"v=([A-Za-z0-9+/]{20,}=*)", raw)))


def secrets(entry) -> list[bytes]:
    """Every secret of the capture: the password, and for SCRAM the proofs and signatures."""
    out = [entry["sasl"]["password"].encode()]
    if entry["sasl"]["mechanism"].startswith("SCRAM"):
        proofs = scram_proofs(entry)
        signatures = scram_signatures(entry)
        assert len(proofs) >= 3 and len(signatures) >= 3  # one per connection
        out += proofs + signatures
    return out


def shown_secrets(entry) -> list[bytes]:
    """What --show-secrets must reveal: the password (PLAIN), the proofs and signatures (SCRAM
    sends no password)."""
    if entry["sasl"]["mechanism"] == "PLAIN":
        return [entry["sasl"]["password"].encode()]
    return scram_proofs(entry) + scram_signatures(entry)


def b64_forms(secret: bytes) -> list[bytes]:
    """What base64 of any bytes holding ``secret`` contains, at each of the 3 alignments."""
    out = []
    for k in range(3):
        core = secret[k:]
        core = core[: len(core) // 3 * 3]
        if len(core) >= 6:
            out.append(base64.b64encode(core))
    return out


def json_bytes(text_out: str) -> list[bytes]:
    """Every string of a JSON or NDJSON output, and the decoded {"base64": ...} values."""
    docs = []
    try:
        docs = [json.loads(text_out)]
    except json.JSONDecodeError:
        docs = [json.loads(line) for line in text_out.splitlines() if line.strip()]
    out: list[bytes] = []

    def walk(v):
        if isinstance(v, dict):
            if set(v) == {"base64"} and isinstance(v["base64"], str):
                out.append(base64.b64decode(v["base64"]))
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str):
            out.append(v.encode())

    walk(docs)
    return out


def shows(output: bytes, secret: bytes, is_json: bool) -> bool:
    """Whether ``output`` holds ``secret`` in any encoding."""
    forms = [secret, secret.hex().encode(), secret.hex().upper().encode(), *b64_forms(secret)]
    if any(f in output for f in forms):
        return True
    return is_json and any(secret in b for b in json_bytes(output.decode()))
