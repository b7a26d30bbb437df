"""The `memstore` command line: `main` holds the group, each sibling one group of commands."""
