"""The benchmark harness on top: the pytest plugin, the pipeline's table of stages and the options.

Takes pytest's command line and the tasks; gives one test per case, a
:class:`~kernelgen.task.results.CaseResult` per case through :func:`~kernelgen.harness.pipeline.evaluate_answer`,
the terminal summary, and the hooks reports attach to.
"""
