"""Spark front end: the same analysis over large capture sets (``pip install -e '.[spark]'``).

:mod:`analyzer.spark.source` turns capture files into DataFrames, the pipeline running on the
executors; :mod:`analyzer.spark.jobs` holds the jobs over them and the command line. Only these
modules import pyspark; the core never does.
"""
