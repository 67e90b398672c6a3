"""The benchmark of scripts/bench: one table of ratios, each row against a yardstick
sampled side by side with it in the same run (see ``__main__``)."""
