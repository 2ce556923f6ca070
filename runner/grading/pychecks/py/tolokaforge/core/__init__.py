"""See tolokaforge.core.grading."""
