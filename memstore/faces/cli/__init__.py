"""The `memstore` command line: `main` holds the group, `common` what its commands share, and
each other module one group of commands."""
