"""The test suite (a package so that ``tests.helpers`` imports the same way from every test)."""
