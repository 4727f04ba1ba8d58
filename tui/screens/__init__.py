"""Screens pushed over the main view: choices that need an answer, and the statistics panel."""
