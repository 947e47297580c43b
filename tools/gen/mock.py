"""librdkafka's mock cluster, the broker of most scenarios: 3 brokers on 127.0.0.1, created in
its own process (inside the namespace) through the ``rd_kafka_mock_*`` C API of the librdkafka
shared library that ships inside confluent-kafka (ctypes).

The rd_kafka_t that hosts the mock has no bootstrap servers, so it sends nothing itself: every
Kafka packet in a capture comes from the scenario's clients. In front of it, a scenario may put
the SASL front-end (sasl.py) or the TLS front-end (tls.py); the mock then advertises the
front-end's ports, and tcpdump records only those.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from .core import NUM_BROKERS, Scenario
from .netns import in_ns, ports_of, self_cmd, stop
from .sasl import SASL_MECHANISMS, start_sasl_front_end

NAME = "mock"
# Scenario.mock_settings names -> the rd_kafka_mock_* setter taking (mcluster, int)
MOCK_SETTINGS = {
    "group_consumer_session_timeout_ms": "set_group_consumer_session_timeout_ms",  # KIP-848
    "group_consumer_heartbeat_interval_ms": "set_group_consumer_heartbeat_interval_ms",  # KIP-848
    "group_initial_rebalance_delay_ms": "group_initial_rebalance_delay_ms",
}


def _librdkafka() -> ctypes.CDLL:
    import confluent_kafka

    libdir = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    found = sorted(libdir.glob("librdkafka*.so*"))
    lib = ctypes.CDLL(str(found[0]) if found else "librdkafka.so.1")
    vp, cp, i32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    sigs = {
        "rd_kafka_conf_new": (vp, []),
        "rd_kafka_conf_set": (i32, [vp, cp, cp, cp, ctypes.c_size_t]),
        "rd_kafka_new": (vp, [i32, vp, cp, ctypes.c_size_t]),
        "rd_kafka_mock_cluster_new": (vp, [vp, i32]),
        "rd_kafka_mock_cluster_bootstraps": (cp, [vp]),
        "rd_kafka_mock_topic_create": (i32, [vp, cp, i32, i32]),
        "rd_kafka_mock_group_initial_rebalance_delay_ms": (None, [vp, ctypes.c_int32]),
        "rd_kafka_mock_set_controller_id": (None, [vp, ctypes.c_int32]),
        "rd_kafka_mock_set_apiversion": (i32, [vp, ctypes.c_int16, ctypes.c_int16, ctypes.c_int16]),
        "rd_kafka_mock_broker_set_host_port": (None, [vp, ctypes.c_int32, cp, i32]),
        "rd_kafka_mock_push_request_errors_array": (
            None,
            [vp, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)],
        ),
        "rd_kafka_mock_broker_set_rtt": (i32, [vp, ctypes.c_int32, i32]),
        "rd_kafka_mock_broker_set_down": (i32, [vp, ctypes.c_int32]),
        "rd_kafka_mock_broker_set_up": (i32, [vp, ctypes.c_int32]),
        "rd_kafka_mock_clear_request_errors": (None, [vp, ctypes.c_int16]),
        "rd_kafka_mock_partition_set_leader": (i32, [vp, cp, ctypes.c_int32, ctypes.c_int32]),
        **{f"rd_kafka_mock_{fn}": (None, [vp, i32]) for fn in MOCK_SETTINGS.values()},
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def parse_cap(text: str) -> tuple[int, int, int]:
    """``"KEY:MIN:MAX"`` -> (api key, min version, max version)."""
    key, lo, hi = (int(x) for x in text.split(":"))
    return key, lo, hi


def serve_mock(
    topics: list[str],
    partitions: int,
    caps: list[tuple[int, int, int]],
    sasl: tuple[str, ...] = (),
    tls: str = "",
    tls_dir: str = "",
    settings: list[tuple[str, int]] | None = None,
) -> None:
    """Start a mock cluster, print its bootstrap list, serve until stdin closes.

    The rd_kafka_t that hosts the mock has no bootstrap servers, so it sends nothing itself:
    every Kafka packet in a capture comes from the scenario's clients.

    With ``sasl`` (mechanisms), a SASL front-end listens for each broker and the mock advertises
    the front-end's ports (Metadata, FindCoordinator), so clients only ever talk to the
    front-end; the bootstrap list printed is the front-end's.
    """
    lib = _librdkafka()
    conf = lib.rd_kafka_conf_new()
    err = ctypes.create_string_buffer(512)
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, len(err))
    rk = lib.rd_kafka_new(0, conf, err, len(err))
    if not rk:
        sys.exit(f"rd_kafka_new failed: {err.value.decode()}")
    mcluster = lib.rd_kafka_mock_cluster_new(rk, NUM_BROKERS)
    if not mcluster:
        sys.exit("rd_kafka_mock_cluster_new failed")
    lib.rd_kafka_mock_group_initial_rebalance_delay_ms(mcluster, 0)
    lib.rd_kafka_mock_set_controller_id(mcluster, 1)  # unset, Metadata says controller 0
    for name, value in settings or ():
        getattr(lib, f"rd_kafka_mock_{MOCK_SETTINGS[name]}")(mcluster, value)
    for key, lo, hi in caps:
        if lib.rd_kafka_mock_set_apiversion(mcluster, key, lo, hi):
            sys.exit(f"rd_kafka_mock_set_apiversion({key}, {lo}, {hi}) failed")
    for t in topics:
        rc = lib.rd_kafka_mock_topic_create(mcluster, t.encode(), partitions, NUM_BROKERS)
        if rc:
            sys.exit(f"rd_kafka_mock_topic_create({t}) failed: {rc}")
    bootstrap = lib.rd_kafka_mock_cluster_bootstraps(mcluster).decode()
    if sasl:
        # the bootstrap list is in broker id order (1..N)
        ports = start_sasl_front_end(ports_of(bootstrap), sasl)
        for broker_id, port in enumerate(ports, 1):
            lib.rd_kafka_mock_broker_set_host_port(mcluster, broker_id, b"127.0.0.1", port)
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    elif tls:
        from .tls import HOST, start_front_end

        ports = start_front_end(ports_of(bootstrap), tls, Path(tls_dir))
        for broker_id, port in enumerate(ports, 1):
            lib.rd_kafka_mock_broker_set_host_port(mcluster, broker_id, HOST.encode(), port)
        bootstrap = ",".join(f"{HOST}:{p}" for p in ports)
    control = start_control(lib, mcluster, bootstrap)
    print(bootstrap, flush=True)
    sys.stdin.read()
    control.close()
    os._exit(0)  # skip librdkafka's teardown: the process is done


# Error injection from a scenario's worker (another process): a Unix socket in the abstract
# namespace (nothing on the file system, nothing on the captured loopback), one JSON request per
# connection, answered with one JSON line. Requests (``op``):
#   push_request_errors   {"api": 0, "errors": [6, 7]}: the cluster's next answers to that API
#   broker_push_request_error_rtts {"broker": 1, "api": 0, "errors": [[0, 6000]]}: (error, delay
#                         in ms) for the next answers of one broker; error 0 delays a good answer
#   partition_push_request_errors {"topic": t, "partition": 0, "api": 0, "errors": [...]}
#   broker_set_rtt        {"broker": 1, "ms": 0}: delay every answer of that broker
#   broker_set_down       {"broker": 1}: close its connections and refuse new ones (accepted and
#                         closed at once); broker_set_up {"broker": 1}: serve again
#   clear_request_errors  {"api": 0}
#   partition_set_leader  {"topic": t, "partition": 0, "broker": 2}
# rd_kafka_mock_* with variadic arguments are called with every argument typed (C int).
def control_address(bootstrap: str) -> str:
    return f"\0kgen-mock-{ports_of(bootstrap)[0]}"


def _control_call(lib: ctypes.CDLL, mcluster: int, req: dict) -> dict:
    c_int, vp = ctypes.c_int, ctypes.c_void_p(mcluster)
    op = req["op"]
    if op == "push_request_errors":
        errs = [int(e) for e in req["errors"]]
        arr = (c_int * len(errs))(*errs)
        lib.rd_kafka_mock_push_request_errors_array(vp, req["api"], len(errs), arr)
        return {"ok": True}
    if op == "broker_push_request_error_rtts":
        fn = lib.rd_kafka_mock_broker_push_request_error_rtts
        fn.restype = c_int
        flat = [c_int(int(x)) for pair in req["errors"] for x in pair]
        rc = fn(
            vp,
            ctypes.c_int32(req["broker"]),
            ctypes.c_int16(req["api"]),
            ctypes.c_size_t(len(req["errors"])),
            *flat,
        )
        return {"ok": rc == 0, "rc": rc}
    if op == "partition_push_request_errors":
        fn = lib.rd_kafka_mock_partition_push_request_errors
        fn.restype = None
        errs = [c_int(int(e)) for e in req["errors"]]
        fn(
            vp,
            ctypes.c_char_p(req["topic"].encode()),
            ctypes.c_int32(req["partition"]),
            ctypes.c_int16(req["api"]),
            ctypes.c_size_t(len(errs)),
            *errs,
        )
        return {"ok": True}
    if op == "broker_set_rtt":
        return {"ok": lib.rd_kafka_mock_broker_set_rtt(vp, req["broker"], req["ms"]) == 0}
    if op == "broker_set_down":
        return {"ok": lib.rd_kafka_mock_broker_set_down(vp, req["broker"]) == 0}
    if op == "broker_set_up":
        return {"ok": lib.rd_kafka_mock_broker_set_up(vp, req["broker"]) == 0}
    if op == "clear_request_errors":
        lib.rd_kafka_mock_clear_request_errors(vp, req["api"])
        return {"ok": True}
    if op == "partition_set_leader":
        rc = lib.rd_kafka_mock_partition_set_leader(
            vp, req["topic"].encode(), req["partition"], req["broker"]
        )
        return {"ok": rc == 0, "rc": rc}
    return {"ok": False, "error": f"unknown op {op!r}"}


def start_control(lib: ctypes.CDLL, mcluster: int, bootstrap: str) -> socket.socket:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(control_address(bootstrap))
    srv.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn, conn.makefile("rwb") as fh:
                try:
                    answer = _control_call(lib, mcluster, json.loads(fh.readline()))
                except Exception as exc:  # noqa: BLE001 - the answer says what failed
                    answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                fh.write(json.dumps(answer).encode() + b"\n")
                fh.flush()

    threading.Thread(target=serve, name="mock-control", daemon=True).start()
    return srv


def mock_control(bootstrap: str, op: str, **args: object) -> dict:
    """Ask the scenario's mock cluster (its serving process) to inject errors or delays."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(control_address(bootstrap))
        with s.makefile("rwb") as fh:
            fh.write(json.dumps({"op": op, **args}).encode() + b"\n")
            fh.flush()
            answer = json.loads(fh.readline())
    if not answer.get("ok"):
        raise RuntimeError(f"mock control {op} {args}: {answer}")
    return answer


@contextlib.contextmanager
def mock_cluster(
    topics: tuple[str, ...] | list[str],
    caps: tuple[tuple[int, int, int], ...] = (),
    sasl: tuple[str, ...] = (),
    tls: str = "",
    tls_dir: Path | None = None,
    settings: tuple[tuple[str, int], ...] = (),
) -> Iterator[str]:
    env = None
    if tls:
        from .tls import env_for_mock

        assert tls_dir is not None
        env = env_for_mock(tls_dir, tls)
    cmd = self_cmd(
        "--serve-mock",
        "--topics",
        ",".join(topics),
        "--api-caps",
        ",".join(":".join(map(str, c)) for c in caps),
        "--sasl",
        ",".join(sasl),
        "--tls",
        tls,
        "--tls-dir",
        str(tls_dir or ""),
        "--mock-settings",
        ",".join(f"{k}={v}" for k, v in settings),
    )
    proc = subprocess.Popen(in_ns(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line:
            raise RuntimeError("mock cluster did not start")
        yield line
    finally:
        if proc.stdin:
            proc.stdin.close()
        stop(proc)


def cluster(scn: Scenario, tls_dir: Path) -> contextlib.AbstractContextManager[str]:
    """The scenario's mock cluster (with its SASL or TLS front-end): its bootstrap list."""
    return mock_cluster(
        scn.topics, scn.api_caps, SASL_MECHANISMS if scn.sasl else (), scn.tls, tls_dir, scn.mock_settings
    )


def capture_ports(scn: Scenario, bootstrap: str) -> list[int] | None:
    """The ports tcpdump records: a front-end's only (its own connections to the mock brokers
    would repeat every packet); None (all TCP) without one."""
    return ports_of(bootstrap) if scn.sasl or scn.tls else None


def manifest_extra(scn: Scenario) -> dict[str, str]:
    return {}  # the mock's version is the client's librdkafka (client_version)
