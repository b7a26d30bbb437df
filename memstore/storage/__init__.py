"""The store and its one write transaction, its files, and what git history supports (trust,
drift).

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
