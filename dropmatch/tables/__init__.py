"""The tables a recorded sweep is read through: summaries, the speed/quality trade-off, the verdict and the power
planner. Pure pandas and numpy on a sweep's tidy table: no model, no figure, no file. The figures (viz/) draw them,
the lab writes them, the command line and the app show them."""
