"""Reports of benchmark runs: the results store, run comparison and merging, Allure, W&B.

The pytest side lives in :mod:`kernelgen.report.plugin`; ``kernelgen report`` is the command
line side. Heavy packages (allure, wandb, matplotlib, tqdm) are imported where they are used.
"""
