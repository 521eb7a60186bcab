"""The command line (``skdpval``). Imports the estimators."""
