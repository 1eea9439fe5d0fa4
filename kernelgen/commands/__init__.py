"""One module per ``kernelgen`` subcommand (see :mod:`kernelgen.cli`)."""

from kernelgen.errors import KernelgenError


class UsageError(KernelgenError):
    """A command-line argument no run can work with: one line, exit status 2 (as argparse's own)."""

    stage = "usage"
    exit_status = 2
