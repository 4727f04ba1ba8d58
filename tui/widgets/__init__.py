"""Widgets of the specterm app: editor with ghost text, file tree, chat pane, status bar."""
