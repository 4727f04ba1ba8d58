"""Inline suggestions apart from any widget: the lifecycle of the suggestion at an editor's
cursor (`controller.SuggestionController`) and the app's engine prewarms (`prewarm.Prewarmer`)."""
