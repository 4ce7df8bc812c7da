"""`rlvr report` (one self-contained HTML page of a run, or several overlaid) and
`rlvr dashboard` (the same page served live, refreshing as steps land); see docs/report.md."""
