"""``kafka-analyzer check``: rules over recorded traffic for CI (see :mod:`analyzer.check.run`)."""
