"""specterm.tui: the Textual application, CLI and configuration."""
