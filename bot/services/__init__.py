"""Business logic in rooms by domain (see CONTRIBUTING.md "Layout"); nothing here imports discord."""
