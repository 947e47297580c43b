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


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup`` (the default addopts: ``-n auto``), the tests of a module that
    use one of its module-, class- or package-scoped fixtures (a Spark session, a namespace with
    a mock cluster, a capture analysed once) form one group, run by one worker: the fixture is
    set up once, not once per worker. A test may still name its own ``xdist_group``."""
    # on a worker xdist sets dist to "no" and keeps the mode in the option loadgroup
    if not (config.getoption("dist", "no") == "loadgroup" or getattr(config.option, "loadgroup", False)):
        return
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or any(True for _ in item.iter_markers("xdist_group")):
            continue
        if any(defs and defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
