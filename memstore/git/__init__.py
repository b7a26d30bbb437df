"""git as the history: running git, writing objects and commits, reading the log, signing, the pre-
commit hook.

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
