"""Every file a command writes (``export -o``, ``read -w``, ``stats --metrics-file``, ``check
--junit``/``--sarif``/``--update-baseline``) is checked before anything is read: naming a file the
run reads (a capture, the key log, the rules, the baseline it compares with) leaves that file as it
was, and a directory or a missing directory is one line; exit 2 and no traceback in every case."""

from __future__ import annotations

import shutil

import pytest

from analyzer import cli
from tests.helpers.captures import CAPTURES

SOURCE = CAPTURES / "producer-plain.pcap"


@pytest.fixture
def files(tmp_path):
    cap = tmp_path / "in.pcap"
    shutil.copy(SOURCE, cap)
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nid = "no-errors"\nwhere = "error"\nassert = "false"\n')
    keys = tmp_path / "keys.log"
    keys.write_text("")
    (tmp_path / "adir").mkdir()
    return tmp_path, cap, rules, keys


CASES = [
    # (argv after the command, with {cap} {rules} {keys} {dir} {tmp}), the line said
    ("export", ["{cap}", "-o", "{cap}"], "-o: {cap} is the capture being read"),
    ("export", ["{cap}", "-j", "2", "-o", "{cap}"], "-o: {cap} is the capture being read"),
    ("export", ["{cap}", "--tls-keylog", "{keys}", "-o", "{keys}"], "-o: {keys} is the key log being read"),
    ("export", ["{cap}", "-o", "{dir}"], "-o: is a directory: {dir}"),
    ("export", ["{cap}", "-o", "{tmp}/no/x.json"], "-o: no such directory: {tmp}/no"),
    ("read", ["{cap}", "-w", "{cap}"], "-w: {cap} is the capture being read"),
    ("stats", ["{cap}", "--metrics-file", "{cap}"], "--metrics-file: {cap} is the capture being read"),
    ("stats", ["{cap}", "--metrics-file", "{tmp}/no/m.prom"], "--metrics-file: no such directory"),
    ("check", ["{cap}", "--junit", "{cap}"], "--junit: {cap} is the capture being read"),
    ("check", ["{cap}", "--sarif", "{dir}"], "--sarif: is a directory: {dir}"),
    ("check", ["{cap}", "--junit", "{tmp}/no/j.xml"], "--junit: no such directory: {tmp}/no"),
    ("check", ["{cap}", "--rules", "{rules}", "--sarif", "{rules}"], "--sarif: {rules} is the rules file"),
    ("check", ["{cap}", "--baseline", "{cap}", "--update-baseline"], "--baseline: {cap} is the capture"),
]


@pytest.mark.parametrize("command, argv, said", CASES, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(CASES)])
def test_an_output_that_cannot_be_written_is_one_line_before_reading(files, capsys, command, argv, said):
    tmp, cap, rules, keys = files
    names = {"cap": cap, "rules": rules, "keys": keys, "dir": tmp / "adir", "tmp": tmp}
    before = {p: p.read_bytes() for p in (cap, rules, keys)}
    capsys.readouterr()
    assert cli.main([command, *(a.format(**names) for a in argv)]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kafka-analyzer: {said.format(**names)}"), err
    assert out == ""
    assert {p: p.read_bytes() for p in before} == before


def test_outputs_beside_the_inputs_are_written(files, capsys):
    tmp, cap, rules, _ = files
    assert cli.main(["export", str(cap), "-o", str(tmp / "out.json")]) == 0
    assert (tmp / "out.json").read_bytes().startswith(b'{"type":"capture"')
    junit, sarif, base = tmp / "j.xml", tmp / "s.sarif", tmp / "base.json"
    rc = cli.main(["check", str(cap), "--junit", str(junit), "--sarif", str(sarif)])
    assert rc in (0, 1) and junit.stat().st_size > 0 and sarif.stat().st_size > 0
    assert cli.main(["check", str(cap), "--baseline", str(base), "--update-baseline"]) in (0, 1)
    assert base.stat().st_size > 0
    assert cap.read_bytes() == SOURCE.read_bytes()
