"""What teams do with a store: the ledger, rules, upkeep and sessions, as plain functions over a
store.

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
