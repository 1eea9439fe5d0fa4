"""The model side: the prompt, providers, constrained decoding, the generation cache, repair and optimization rounds.

Takes a task; gives a model's answers (text), cached by provider, model, prompt, schema and
sampling, with the repair loop and optimization rounds around them, and ``kernelgen serve``.
"""
