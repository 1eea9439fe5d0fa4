"""What every stage shares about a benchmark case: the task, the case, its verdict and result.

Takes a task's YAML (:mod:`.spec`); gives the size draws a case is checked on, the inputs and the
reference's outputs, the comparison with tolerances, a task's calls (:mod:`.variants`), the
:class:`~kernelgen.task.results.CaseResult` every report reads, and the metrics over results.
"""
