"""Showing results: terminal tables, plots, exports. Everything here reads only the store's records."""
