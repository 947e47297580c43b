"""check's JUnit report validates against Jenkins' JUnit schema (junit-10.xsd, as shipped in
pytest's source distribution) and its SARIF against the OASIS SARIF 2.1.0 schema (as shipped in
Microsoft's @microsoft/jest-sarif npm package): both fetched from the package registries once
and cached; the tests skip when neither the cache nor the registry can be reached."""

import io
import json
import os
import subprocess
import tarfile
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from analyzer import cli
from tests.helpers.captures import CAPTURES

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-analyzer-tests"
PYTEST_SDIST = "pytest==8.3.3"
JEST_SARIF = "@microsoft/jest-sarif@1.0.0-beta.0"


def _cached(name: str, fetch) -> Path:
    target = CACHE / name
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as d:
            try:
                data = fetch(Path(d))
            except (OSError, subprocess.SubprocessError, KeyError) as exc:
                pytest.skip(f"cannot fetch {name} from the package registry: {exc}")
        target.write_bytes(data)
    return target


def _junit_xsd(d: Path) -> bytes:
    """junit-10.xsd out of pytest's sdist, found through the package index's JSON API (PEP 691)
    and checked against the hash the index gives: ``pip download --no-binary`` would also build
    the sdist's metadata, installing its build requirements first (4-20 s of CPU)."""
    import hashlib
    import urllib.request

    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    name, version = PYTEST_SDIST.split("==")
    req = urllib.request.Request(
        f"{index}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        files = json.load(r)["files"]
    sdist = next(f for f in files if f["filename"] == f"{name}-{version}.tar.gz")
    with urllib.request.urlopen(urllib.parse.urljoin(f"{index}/{name}/", sdist["url"]), timeout=120) as r:
        data = r.read()
    if hashlib.sha256(data).hexdigest() != sdist["hashes"]["sha256"]:
        raise OSError(f"{sdist['filename']}: the download does not match the index's sha256")
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        member = next(m for m in t.getmembers() if m.name.endswith("testing/example_scripts/junit-10.xsd"))
        return t.extractfile(member).read()


def _sarif_schema(d: Path) -> bytes:
    subprocess.run(
        ["npm", "pack", "--silent", JEST_SARIF], cwd=d, check=True, capture_output=True, timeout=300
    )
    tgz = next(d.glob("*.tgz"))
    with tarfile.open(tgz) as t:
        return t.extractfile("package/lib/schemas/sarif-2.1.0-rtm.5.json").read()


def run_check(*args) -> int:
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        return cli.main(["check", *map(str, args)])


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    d = tmp_path_factory.mktemp("reports")
    caps = [
        CAPTURES / "librdkafka-produce-consume-gzip.pcap",
        CAPTURES / "librdkafka-txn.pcap",
        CAPTURES / "kafka-python-0.8.2-none.pcap",
    ]
    rc = run_check(*caps, "-j", "2", "--junit", d / "r.xml", "--sarif", d / "r.sarif", "--fail-on", "warning")
    assert rc == 1  # warnings fail with --fail-on warning: the reports carry failures
    return d


def test_junit_validates_against_the_jenkins_schema(reports):
    import xmlschema

    xsd = xmlschema.XMLSchema(str(_cached("junit-10.xsd", _junit_xsd)))
    xsd.validate(str(reports / "r.xml"))
    text = (reports / "r.xml").read_text()
    assert text.count("<testsuite ") == 1 and "<failure " in text


def test_sarif_validates_against_the_2_1_0_schema(reports):
    import jsonschema

    schema = json.loads(_cached("sarif-2.1.0-rtm.5.json", _sarif_schema).read_text())
    doc = json.loads((reports / "r.sarif").read_text())
    jsonschema.Draft7Validator(schema).validate(doc)
    run = doc["runs"][0]
    assert len(run["artifacts"]) == 3 and run["results"]
    assert all(r["ruleId"] == run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] for r in run["results"])
