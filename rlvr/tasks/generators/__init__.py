"""The generators of the bundled task sets (build time, not run time).

Each writes one file of `rlvr/tasks/data/` deterministically (`python -m
rlvr.tasks.generators.pyfuncs` rewrites `python_functions.jsonl` byte for byte the same)
and checks what it writes by running the reference solutions in the sandbox or through
the environments. Nothing at run time imports them: the run-time path (schema, loaders,
split, sampler) sits below the environments and the sandbox, and these sit above.
"""
