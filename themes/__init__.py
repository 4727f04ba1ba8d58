"""Theme files (themes/*.toml) shipped as package data; tui/themes.py loads them."""
