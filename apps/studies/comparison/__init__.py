"""The general comparison: outcomes by condition and model, differences and ratios."""
