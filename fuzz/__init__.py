"""Coverage-guided fuzzing of the G-Cite nodes (`make fuzz`); not part of the plugin package."""
