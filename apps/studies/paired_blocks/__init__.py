"""Route choice (seed 002): paired task-block contrasts, its fixtures and its sub-study rules."""
