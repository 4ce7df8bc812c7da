"""The bundled problem families that draw their tasks' hidden tests at run time: the
stdin/stdout programs (`stdio`, `catalogue`, `fresh`) and the sales-table questions
(`sales`). Pure Python; they import nothing of rlvr's beyond `rlvr.types` and
`rlvr.tasks.draws`. `rlvr/tasks/generators/` builds the task files from them."""
