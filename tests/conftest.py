import gc
import os

import pytest

from tests.helpers.captures import PUBLIC, project_captures, public_captures


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def pytest_report_header(config):
    return (
        f"public captures: {len(public_captures())} ({PUBLIC}), "
        f"project captures: {len(project_captures())}, root={os.geteuid() == 0}"
    )


# Fixture scopes whose value a module's tests share: computed once per process that runs them.
SHARED_SCOPES = ("class", "module", "package")
# Session-scoped fixtures that are expensive in every process that opens one: the tests using
# one form one group (tests/spark/conftest.py's local Spark session: one JVM, on one worker).
SESSION_GROUPS = {"spark": "spark"}


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup`` (the default addopts: ``-n auto``), the tests of a module that
    use one of its module-, class- or package-scoped fixtures (a namespace with a mock cluster, a
    capture analysed once) form one group, run by one worker: the fixture is set up once, not
    once per worker; the tests using a fixture of SESSION_GROUPS form that fixture's group (every
    Spark module's tests, in one session). A test may still name its own ``xdist_group``.
    The session groups go first: the longest group starts at once, the rest fill around it."""
    # on a worker xdist sets dist to "no" and keeps the mode in the option loadgroup
    if not (config.getoption("dist", "no") == "loadgroup" or getattr(config.option, "loadgroup", False)):
        return
    first, module_groups = [], {}  # a module's own group joins its session group if it has one
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or any(True for _ in item.iter_markers("xdist_group")):
            continue
        module = item.nodeid.split("::")[0]
        group = next((g for name, g in SESSION_GROUPS.items() if name in info.name2fixturedefs), None)
        if group is not None:
            module_groups[module] = group
            first.append(item)
        elif any(defs and defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values()):
            module_groups.setdefault(module, module)
            first.append(item)
    for item in first:
        item.add_marker(pytest.mark.xdist_group(module_groups[item.nodeid.split("::")[0]]))
    first = [i for i in first if module_groups[i.nodeid.split("::")[0]] in SESSION_GROUPS.values()]
    if first:
        ids = {id(i) for i in first}
        items[:] = first + [i for i in items if id(i) not in ids]


# The cyclic collector's oldest generation considered after this many of the middle one's
# collections (CPython's default: 10). A test process keeps about a million objects alive (the
# collected tests, module fixtures, cached analyses), and each full collection walks them all:
# tests/unit/{dissect,filter,export} in one process spent 4-5 s of its 55-70 s in 22 full
# collections with the default, 1.5-1.8 s in 5 with this. The commands the tests start as
# processes keep CPython's defaults.
FULL_GC_EVERY = 100


def pytest_configure(config):
    g0, g1, _ = gc.get_threshold()
    gc.set_threshold(g0, g1, FULL_GC_EVERY)


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker more than the cores. The live tests spend most of their time
    waiting (a mock cluster's rebalances, tcpreplay's rate, the ring's timeouts: 208 s of wall
    time for 33 s of CPU in a run measured per test), as do parts of the TUI and hostile tests;
    a third worker on two cores runs other tests in that time."""
    return (os.cpu_count() or 1) + 1
