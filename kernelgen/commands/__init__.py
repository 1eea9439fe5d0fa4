"""One module per ``kernelgen`` subcommand (see :mod:`kernelgen.cli`)."""
