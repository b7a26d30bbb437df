"""What teams do with a store, as plain functions over it: the ledger, rules, keeping it true
(care) and sessions.

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
