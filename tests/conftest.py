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
